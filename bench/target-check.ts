/** One figure of a bench run held against its target (bench/README.md): pass is null when not measured. */
export interface TargetCheck {
  name: string;
  measured: number | null;
  limit: string;
  pass: boolean | null;
}
