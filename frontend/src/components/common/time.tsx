// One way to show a moment everywhere: the user's time zone, 24-hour clock, the zone named.
// The exact UTC instant is in the element's title and datetime attribute.

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string | undefined): Intl.DateTimeFormat {
  const key = timeZone ?? "";
  let f = formatters.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat("en-GB", {
      year: "numeric",
      month: "short",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
      timeZoneName: "short",
      timeZone,
    });
    formatters.set(key, f);
  }
  return f;
}

/** "23 Nov 2026, 10:17:30 CET" in the browser's zone (or the one given); "—" for no value. */
export function formatTime(value: string | Date | null | undefined, timeZone?: string): string {
  if (value === null || value === undefined || value === "") return "—";
  const d = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  return formatter(timeZone).format(d);
}

export function Time({ value, timeZone }: { value: string | null | undefined; timeZone?: string }) {
  if (!value) return <>—</>;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return <>{value}</>;
  return (
    <time dateTime={d.toISOString()} title={d.toISOString()}>
      {formatTime(d, timeZone)}
    </time>
  );
}
