// SLA history by episode: the violations of one check (backend, lane, metric) that follow each
// other within a hold-down are one episode — a KPI flapping around its limit for four minutes is
// one row with its start, end and worst value, not dozens of rows opening and closing.
// The merge is on the read side only: the stored violations (and their evidence) stay as the
// SLA evaluation (kpi/sla.py) wrote them; each episode keeps its worst violation for "Explain".
import type { Schemas } from "../../api/client";

type Violation = Schemas["SlaViolationPublic"];

/** Two violations of one check closer than this (end of one to start of the next) are one episode. */
export const EPISODE_HOLD_S = 60;

export interface Episode {
  key: string;
  backendId: number;
  backendName: string;
  lane: number | null;
  metric: string;
  threshold: number;
  /** The limit is a floor (guaranteed rate): the worst value is the lowest. */
  below: boolean;
  worst: number;
  startedAt: string;
  /** null while its last violation is open. */
  endedAt: string | null;
  /** How many stored violations the episode merges. */
  violations: number;
  /** The violation with the worst value, explained on demand. */
  worstViolation: Violation;
}

const ms = (iso: string) => Date.parse(iso);
const isBelow = (v: Violation) => (v.detail as { direction?: unknown }).direction === "below";

/** Episodes of ``violations`` (any order), newest start first. */
export function mergeEpisodes(violations: readonly Violation[], holdS = EPISODE_HOLD_S): Episode[] {
  const sorted = [...violations].sort((a, b) => ms(a.started_at) - ms(b.started_at) || a.id - b.id);
  const current = new Map<string, Episode>();
  const out: Episode[] = [];
  for (const v of sorted) {
    const check = `${v.backend_id}/${v.lane ?? "all"}/${v.metric}/${v.threshold}`;
    const below = isBelow(v);
    const ep = current.get(check);
    const joins = ep !== undefined && (ep.endedAt === null || ms(v.started_at) - ms(ep.endedAt) <= holdS * 1000);
    if (ep && joins) {
      ep.violations += 1;
      if (ep.endedAt !== null)
        ep.endedAt = v.ended_at == null || ms(v.ended_at) > ms(ep.endedAt) ? v.ended_at : ep.endedAt;
      if (below ? v.worst < ep.worst : v.worst > ep.worst) {
        ep.worst = v.worst;
        ep.worstViolation = v;
      }
      continue;
    }
    const next: Episode = {
      key: `${check}@${v.id}`,
      backendId: v.backend_id,
      backendName: v.backend_name,
      lane: v.lane ?? null,
      metric: v.metric,
      threshold: v.threshold,
      below,
      worst: v.worst,
      startedAt: v.started_at,
      endedAt: v.ended_at ?? null,
      violations: 1,
      worstViolation: v,
    };
    current.set(check, next);
    out.push(next);
  }
  return out.sort((a, b) => ms(b.startedAt) - ms(a.startedAt) || a.key.localeCompare(b.key));
}

/** "4 min 10 s", "35 s", "1 h 2 min"; the duration of an episode from its start to its end (or now). */
export function durationText(startedAt: string, endedAt: string | null, now = Date.now()): string {
  const s = Math.max(0, Math.round(((endedAt ? ms(endedAt) : now) - ms(startedAt)) / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  return m % 60 ? `${Math.floor(m / 60)} h ${m % 60} min` : `${Math.floor(m / 60)} h`;
}
