/**
 * The request id of an answer: the caller's X-Request-Id when it is a sane token (≤ 255
 * word characters, `-` or `=`; anything else could forge log lines), else a new UUID.
 */
export function requestIdOf(given: string | null | undefined): string {
  return given && given.length <= 255 && !/[^\w\-=]/.test(given)
    ? given
    : crypto.randomUUID();
}
