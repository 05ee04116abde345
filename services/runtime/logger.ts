/** Structured log sink: one JSON object per line in production, silent in tests. */
export interface Logger {
  info(event: Record<string, unknown>): void;
  error(event: Record<string, unknown>): void;
}

/** JSON-lines logger to stdout/stderr. */
export const jsonLogger: Logger = {
  info: (e) =>
    console.log(JSON.stringify({ t: new Date().toISOString(), ...e })),
  error: (e) =>
    console.error(
      JSON.stringify({ t: new Date().toISOString(), level: "error", ...e }),
    ),
};

/** A logger that drops everything (tests) but can remember lines for assertions. */
export function memoryLogger(): Logger & { lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  return { lines, info: (e) => lines.push(e), error: (e) => lines.push(e) };
}
