import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

/** One series of a chart: its values per bucket (null: no value, e.g. no attempts that hour). */
export type ChartSeries = { label: string; color: string; values: (number | null)[] };

type ChartProps = {
  /** Bucket starts (ISO). */
  x: string[];
  series: ChartSeries[];
  /** "bars": stacked bars (counts); "lines": one line per series (latency). */
  kind: "bars" | "lines";
  /** "hour" labels ticks with times, "day" with dates. */
  bucket: "hour" | "day";
  unit?: string;
  label: string;
  testId: string;
  height?: number;
};

/**
 * Stacked bars: each series is drawn as the running total of itself and the ones before it, tallest
 * first, so every bar shows its part; the legend and the hover read the series' own value.
 */
function stacked(series: ChartSeries[]): (number | null)[][] {
  const acc: number[] = series[0]?.values.map(() => 0) ?? [];
  return series.map((s) => s.values.map((v, i) => (acc[i] = (acc[i] ?? 0) + (v ?? 0))));
}

const STEP = { hour: 3600, day: 86_400 } as const;

/** Day buckets are UTC days (GET /stats), so they are named in UTC; hours in the reader's time. */
const dateOf = (bucket: ChartProps["bucket"], t: number) =>
  bucket === "day" ? uPlot.tzDate(new Date(t * 1000), "Etc/UTC") : new Date(t * 1000);

/** The bucket under the cursor, its time and each series' own value, in a box that follows the cursor. */
function tooltip(p: ChartProps): uPlot.Plugin {
  let box: HTMLDivElement;
  const stamp = uPlot.fmtDate(p.bucket === "hour" ? "{D} {MMM} {HH}:{mm}" : "{D} {MMM} {YYYY} UTC");
  return {
    hooks: {
      init: (u) => {
        box = document.createElement("div");
        box.className = "chart-tip";
        box.hidden = true;
        u.over.appendChild(box);
      },
      setCursor: (u) => {
        const i = u.cursor.idx;
        const t = i === null || i === undefined ? undefined : u.data[0][i];
        if (i === null || i === undefined || t === undefined) {
          box.hidden = true;
          return;
        }
        box.replaceChildren();
        const head = document.createElement("strong");
        head.textContent = stamp(dateOf(p.bucket, t));
        box.appendChild(head);
        for (const s of p.series) {
          const row = document.createElement("div");
          const v = s.values[i] ?? null;
          row.textContent = `${s.label}: ${v === null ? "—" : `${v.toLocaleString()}${p.unit ?? ""}`}`;
          row.style.borderLeft = `0.6rem solid ${s.color}`;
          box.appendChild(row);
        }
        box.hidden = false;
        const left = u.cursor.left ?? 0;
        const flip = left > u.over.clientWidth / 2;
        box.style.left = flip ? "" : `${left + 10}px`;
        box.style.right = flip ? `${u.over.clientWidth - left + 10}px` : "";
      },
    },
  };
}

/** Room for the longest y label (e.g. "1,250 ms"). */
const ySize = (_u: uPlot, values: string[] | null) =>
  16 + 7 * Math.max(3, ...(values ?? []).map((v) => String(v).length));

function options(p: ChartProps, drawn: ChartSeries[], width: number): uPlot.Options {
  const bars = p.kind === "bars";
  const dateFmt = uPlot.fmtDate(p.bucket === "hour" ? "{HH}:{mm}" : "{D} {MMM}");
  return {
    width,
    height: p.height ?? 200,
    ...(p.bucket === "day" ? { tzDate: (t: number) => dateOf("day", t) } : {}),
    legend: { show: false },
    plugins: [tooltip(p)],
    cursor: { points: { show: !bars }, drag: { x: false, y: false } },
    scales: {
      // Each bar covers its bucket: the axis runs to the end of the last one.
      x: { time: true, range: (_u, min, max) => [min, max + STEP[p.bucket]] },
      y: { range: (_u, _min, max) => [0, Math.max(bars ? 4 : 10, Math.ceil(max * 1.1))] },
    },
    axes: [
      { values: (_u, ticks) => ticks.map((t) => dateFmt(dateOf(p.bucket, t))), space: 50, grid: { show: false } },
      {
        size: ySize,
        // Counts are whole numbers: no 2.5 messages.
        ...(bars
          ? { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6] }
          : {}),
        values: (_u, ticks) => ticks.map((t) => `${t.toLocaleString()}${p.unit ?? ""}`),
      },
    ],
    series: [
      {},
      ...drawn.map((s) => ({
        label: s.label,
        stroke: s.color,
        fill: bars ? s.color : undefined,
        width: bars ? 0 : 2,
        ...(bars
          ? { paths: uPlot.paths.bars?.({ size: [0.8, 40], align: 1 }), points: { show: false } }
          : { points: { show: true, size: 6, fill: s.color } }),
      })),
    ],
  };
}

/** A uPlot chart that follows its container's width (1280 px desktops down to 390 px phones). */
export function Chart(p: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = p.x.map((t) => Date.parse(t) / 1000);
    const ys = p.kind === "bars" ? stacked(p.series) : p.series.map((s) => s.values);
    // Bars are drawn in reverse so the tallest running total sits behind the others.
    const data = [xs, ...(p.kind === "bars" ? ys.slice().reverse() : ys)] as uPlot.AlignedData;
    const drawn = p.kind === "bars" ? p.series.slice().reverse() : p.series;
    const plot = new uPlot(options(p, drawn, Math.max(280, el.clientWidth)), data, el);
    const resize = new ResizeObserver(() =>
      plot.setSize({ width: Math.max(280, el.clientWidth), height: p.height ?? 200 }),
    );
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [p]);
  return <figure className="chart" ref={box} aria-label={p.label} data-testid={p.testId} />;
}
