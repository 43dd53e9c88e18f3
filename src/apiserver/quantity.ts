/**
 * Quantities as k8s.io/apimachinery/pkg/api/resource parses them (`100m`, `1.5Gi`, `2e3`), read
 * exactly as Quantity's MilliValue and Value round them (up, without floating point).
 */
const binaryExponents: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const decimalExponents: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const quantityPattern = /^([+-]?)(\d*)(?:\.(\d*))?(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

/**
 * A quantity in whole units (`scale` 0) or thousandths (`scale` 3), rounded up, computed exactly
 * (no floating point: 0.1 CPU is 100 millicores, not 101). Undefined for a value that is not a
 * quantity; API validation refuses those before admission sees them.
 */
export function scaledQuantity(value: string | number, scale: 0 | 3): number | undefined {
  const text = typeof value === 'number' ? String(value) : value.trim();
  const m = quantityPattern.exec(text);
  if (m === null || (m[2] === '' && (m[3] ?? '') === '')) return undefined;
  const fraction = m[3] ?? '';
  let numerator = BigInt(`${m[2] || '0'}${fraction}`);
  let denominator = 10n ** BigInt(fraction.length);
  let exponent = scale;
  if (m[4] !== undefined) exponent += Number(m[4].slice(1));
  else if (m[5] !== undefined && binaryExponents[m[5]] !== undefined) numerator *= 2n ** BigInt(binaryExponents[m[5]]!);
  else exponent += decimalExponents[m[5] ?? '']!;
  if (exponent >= 0) numerator *= 10n ** BigInt(exponent);
  else denominator *= 10n ** BigInt(-exponent);
  const whole = numerator / denominator + (numerator % denominator === 0n ? 0n : 1n);
  return Number(m[1] === '-' ? -whole : whole);
}

/** cpu in millicores, anything else in whole units. */
export function resourceAmount(name: string, value: string | number): number {
  return scaledQuantity(value, name === 'cpu' ? 3 : 0) ?? 0;
}

