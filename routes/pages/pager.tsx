/**
 * The links of a paged list: back, "Page n of m", forward; nothing when there is one page.
 * My images (newer/older) and the operator's console (previous/next) both use it.
 */
export function PageLinks(
  props: {
    page: number;
    pages: number;
    href: (page: number) => string;
    prev?: string;
    next?: string;
  },
) {
  if (props.pages <= 1) return null;
  return (
    <nav class="pager" aria-label="Pages">
      {props.page > 1 && (
        <a
          class="button secondary"
          rel="prev"
          href={props.href(props.page - 1)}
        >
          {props.prev ?? "← Previous"}
        </a>
      )}
      <span>
        Page {props.page} of {props.pages}
      </span>
      {props.page < props.pages && (
        <a
          class="button secondary"
          rel="next"
          href={props.href(props.page + 1)}
        >
          {props.next ?? "Next →"}
        </a>
      )}
    </nav>
  );
}
