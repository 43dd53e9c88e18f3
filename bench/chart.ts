/** A small dependency-free SVG grouped horizontal bar chart for the benchmark results. */

export interface ChartSeries {
  name: string;
  /** CSS colour of the series' bars. */
  color: string;
}

export interface ChartRow {
  label: string;
  /** One value per series, in the series' order; null draws no bar (not measured). */
  values: (number | null)[];
}

export interface BarChart {
  title: string;
  unit: string;
  series: ChartSeries[];
  rows: ChartRow[];
}

const WIDTH = 720;
const LABEL_WIDTH = 230;
const VALUE_WIDTH = 90;
const BAR_HEIGHT = 12;
const BAR_GAP = 2;
const ROW_GAP = 10;
const TOP = 48;

export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c] ?? c);
}

/** Three significant digits, no exponent for the magnitudes the bench produces. */
export function formatValue(value: number): string {
  if (value === 0) return '0';
  const abs = Math.abs(value);
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toPrecision(3);
}

export function renderBarChart(chart: BarChart): string {
  for (const row of chart.rows) {
    if (row.values.length !== chart.series.length) {
      throw new RangeError(`chart row ${JSON.stringify(row.label)} has ${row.values.length} values for ${chart.series.length} series`);
    }
    for (const v of row.values) {
      if (v !== null && (!Number.isFinite(v) || v < 0)) {
        throw new RangeError(`chart row ${JSON.stringify(row.label)} has a value that is not a finite non-negative number: ${v}`);
      }
    }
  }
  const max = Math.max(0, ...chart.rows.flatMap((r) => r.values.filter((v): v is number => v !== null)));
  const plotWidth = WIDTH - LABEL_WIDTH - VALUE_WIDTH;
  const rowHeight = chart.series.length * (BAR_HEIGHT + BAR_GAP) + ROW_GAP;
  const height = TOP + chart.rows.length * rowHeight + 12;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="8" y="18" font-size="14" font-weight="bold">${escapeXml(chart.title)}</text>`,
  );
  let legendX = 8;
  chart.series.forEach((s) => {
    out.push(
      `<rect x="${legendX}" y="28" width="10" height="10" fill="${escapeXml(s.color)}"/>`,
      `<text x="${legendX + 14}" y="37">${escapeXml(s.name)}</text>`,
    );
    legendX += 24 + s.name.length * 7;
  });
  out.push(`<text x="${WIDTH - 8}" y="37" text-anchor="end">${escapeXml(chart.unit)}</text>`);
  chart.rows.forEach((row, i) => {
    const y0 = TOP + i * rowHeight;
    const labelY = y0 + (chart.series.length * (BAR_HEIGHT + BAR_GAP)) / 2 + 4;
    out.push(`<text x="${LABEL_WIDTH - 6}" y="${labelY.toFixed(1)}" text-anchor="end">${escapeXml(row.label)}</text>`);
    row.values.forEach((value, j) => {
      const y = y0 + j * (BAR_HEIGHT + BAR_GAP);
      if (value === null) {
        out.push(`<text x="${LABEL_WIDTH + 2}" y="${y + BAR_HEIGHT - 2}" fill="#888">not measured</text>`);
        return;
      }
      const w = max > 0 ? Math.max(1, (value / max) * plotWidth) : 1;
      out.push(
        `<rect x="${LABEL_WIDTH}" y="${y}" width="${w.toFixed(1)}" height="${BAR_HEIGHT}" fill="${escapeXml(chart.series[j].color)}"/>`,
        `<text x="${(LABEL_WIDTH + w + 4).toFixed(1)}" y="${y + BAR_HEIGHT - 2}">${formatValue(value)}</text>`,
      );
    });
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
