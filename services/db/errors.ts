/**
 * True for the images table's refusal of bytes an admin took down: the trigger of
 * migration 012 raises SQLSTATE P0451. PGlite and node-postgres both carry the state in
 * `code`; the message is checked too, for a driver that wraps the error.
 */
export function isBlockedContent(e: unknown): boolean {
  if (!e || typeof e !== "object") return false;
  const err = e as { code?: unknown; message?: unknown; cause?: unknown };
  if (err.code === "P0451") return true;
  if (
    typeof err.message === "string" && /^blocked content /.test(err.message)
  ) {
    return true;
  }
  return err.cause !== undefined && err.cause !== e &&
    isBlockedContent(err.cause);
}
