/** Rejects with `message` when `p` takes longer than `ms`; the timer never outlives `p`. */
export function withTimeout<T>(
  p: Promise<T>,
  ms: number,
  message: string,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) =>
      timer = setTimeout(() => reject(new Error(message)), ms)
    ),
  ]).finally(() => clearTimeout(timer));
}

/**
 * A health probe's answer: true when `check` resolves true within `ms`; false when it
 * resolves false, fails, or is late (readiness must answer, not wait on a dead dependency).
 */
export async function answersWithin(
  check: () => Promise<boolean>,
  ms: number,
): Promise<boolean> {
  try {
    return await withTimeout(check(), ms, "late");
  } catch {
    return false;
  }
}
