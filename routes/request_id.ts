/**
 * The request id of an answer: the caller's X-Request-Id when it is a sane token (≤ 255
 * word characters, `-` or `=`; anything else could forge log lines), else a new UUID.
 */
export function requestIdOf(given: string | null | undefined): string {
  return given && given.length <= 255 && !/[^\w\-=]/.test(given)
    ? given
    : crypto.randomUUID();
}

/** The access log line of one answer (LOG_REQUESTS): the same fields on every path. */
export function logRequest(
  log: { info(fields: Record<string, unknown>): void },
  line: {
    method: string;
    path: string;
    status: number;
    started: number;
    ip: string | undefined;
    requestId: string;
  },
): void {
  log.info({
    msg: "request",
    method: line.method,
    path: line.path,
    status: line.status,
    ms: Math.round((performance.now() - line.started) * 10) / 10,
    ip: line.ip,
    request_id: line.requestId,
  });
}
