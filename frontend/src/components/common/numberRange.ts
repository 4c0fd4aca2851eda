// Number inputs never snap a value to a limit: an out-of-range or non-integer entry is kept as
// typed and explained, so the user knows what was wrong.

/** The message for a value outside [min, max] (or not a whole number), or undefined if fine. */
export function rangeError(
  label: string,
  value: number | string,
  min: number,
  max: number,
  { required = false }: { required?: boolean } = {},
): string | undefined {
  if (value === "" || value === null) return required ? `${label} is required.` : undefined;
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(n)) return `${label} must be a number.`;
  if (!Number.isInteger(n)) return `${label} must be a whole number; ${value} is not.`;
  if (n < min || n > max) return `${label} must be between ${min} and ${max}; ${n} is out of range.`;
  return undefined;
}

/** Mantine NumberInput props that stop it from clamping or reformatting what the user typed. */
export const NO_CLAMP = { clampBehavior: "none", allowDecimal: false, allowNegative: true } as const;
