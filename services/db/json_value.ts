/**
 * A jsonb column's value as the driver hands it over: node-postgres and PGlite answer it
 * parsed, but a value written as a JSON string (as the job and schedule rows are) may come
 * back as that string. Either way, the value.
 */
export function jsonValue<T>(v: unknown): T {
  return (typeof v === "string" ? JSON.parse(v) : v) as T;
}
