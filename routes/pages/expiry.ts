import { humanSpan } from "./layout.tsx";

/** An image's end of life for people: "expires in 59 min", "kept until deleted". */
export function expiryText(expiresAt: Date | null, now: Date): string {
  if (!expiresAt) return "kept until deleted";
  const left = (expiresAt.getTime() - now.getTime()) / 1000;
  return left <= 60
    ? "expires in under a minute"
    : `expires in ${humanSpan(left)}`;
}
