import type { Context } from "hono";
import { Layout, type PageUser } from "./layout.tsx";

/**
 * True for a person's browser asking for a page (Accept names text/html) outside the API:
 * such requests get error pages; API and image clients (Accept: application/json, image/*,
 * *\/*) keep the JSON envelope.
 */
export function wantsHtml(c: Context): boolean {
  return !c.req.path.startsWith("/api/") &&
    /\btext\/html\b/i.test(c.req.header("accept") ?? "");
}

const TEXT: Record<number, { title: string; body: string }> = {
  403: {
    title: "Not allowed",
    body:
      "This form has expired or came from another site. Go back, reload the page and try again.",
  },
  404: {
    title: "Page not found",
    body:
      "There is nothing here. The address may be mistyped, or the image was deleted or has expired.",
  },
  429: {
    title: "Too many requests",
    body: "Wait a moment and try again.",
  },
  451: {
    title: "Image removed",
    body:
      "This image was taken down by the people who run this site and is no longer available.",
  },
  500: {
    title: "Something went wrong",
    body:
      "The server failed to answer. Try again; if it keeps happening, tell whoever runs this server the request id below.",
  },
  503: {
    title: "Temporarily unavailable",
    body: "The service is busy or restarting. Try again in a moment.",
  },
};

/** True for a status the site has an error page for. */
export function hasErrorPage(status: number): boolean {
  return status in TEXT;
}

/** An error page in the site's style, for a status of {@link TEXT} (else the 500 text). */
export function ErrorPage(
  props: { status: number; user?: PageUser | null; requestId?: string },
) {
  const t = TEXT[props.status] ?? TEXT[props.status >= 500 ? 500 : 404];
  return (
    <Layout title={t.title} user={props.user}>
      <h1>{t.title}</h1>
      <p>{t.body}</p>
      <p>
        <a class="button" href="/">Go to the home page</a>
      </p>
      {props.requestId && (
        <p class="muted">
          Error {props.status} · request id <code>{props.requestId}</code>
        </p>
      )}
    </Layout>
  );
}
