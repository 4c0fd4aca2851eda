// Admission control's refusal (409 "Admission refused") shown next to the SLA fields: for each
// backend link, the guaranteed rates against the capacity and every lane's worst-case delay
// term by term (seed 004 Eq. 1-3), the guaranteed rates per port against each port's capacity, and
// the subscribers' own guarantees against their slice's rate limit: the same numbers the API
// computed (docs/rules.md).
import { Alert, List, Table, Text } from "@mantine/core";
import { ApiProblem } from "../../api/problem";

interface DelayTerm {
  slice_name: string;
  lane: number;
  burst_bits: number;
  residual_bps: number;
  ms: number | null;
}
interface LaneDelay {
  slice_id: number;
  slice_name: string;
  lane: number | null;
  worst_delay_ms: number | null;
  delay_bound_ms: number | null;
  ok: boolean;
  terms: DelayTerm[];
}
interface GuaranteeTerm {
  slice_name: string;
  guaranteed_bps: number;
  subscribers?: number;
  subscribers_bps?: number;
  slice_guaranteed_bps?: number;
}
interface Guaranteed {
  terms: GuaranteeTerm[];
  sum_bps: number;
  limit_bps: number;
  ok: boolean;
  waived?: boolean;
}
export interface PortLoad {
  port: string;
  capacity_bps: number;
  sum_bps: number;
  ok: boolean;
  waived: boolean;
  slices: { slice_name: string }[];
  terms: { slice_name: string; guaranteed_bps: number }[];
}
export interface SubscriberGuarantees {
  slice_id: number;
  slice_name: string;
  count: number;
  sum_bps: number;
  rate_limit_bps: number | null;
  ok: boolean;
  waived: boolean;
}
export interface BackendAdmission {
  backend_id: number;
  backend_name: string;
  capacity_bps: number;
  ok: boolean;
  guaranteed: Guaranteed;
  delay: LaneDelay[];
  unpoliced: { slice_name: string; why: string }[];
  // since per-port and per-subscriber admission; absent from older answers
  ports?: PortLoad[];
  subscribers?: SubscriberGuarantees[];
}

/** The ``admission`` member of a 409, or undefined when the problem is something else. */
export function admissionOf(problem: unknown): BackendAdmission[] | undefined {
  if (!(problem instanceof ApiProblem) || problem.status !== 409) return undefined;
  const a = problem.extensions.admission;
  return Array.isArray(a) ? (a as BackendAdmission[]) : undefined;
}

const mbit = (bps: number) => `${+(bps / 1e6).toFixed(3)} Mbit/s`;
/** One slice's term of a sum of guarantees: its subscribers' sum says so when that is what it promises. */
const term = (t: GuaranteeTerm) => {
  const bySubscribers =
    t.subscribers && t.subscribers_bps !== undefined && t.subscribers_bps > (t.slice_guaranteed_bps ?? 0);
  return `${mbit(t.guaranteed_bps)} (${t.slice_name}${bySubscribers ? `, ${t.subscribers} subscribers` : ""})`;
};
const ms = (v: number | null) => (v == null ? "unbounded" : `${v.toFixed(3)} ms`);

function LaneRow({ d }: { d: LaneDelay }) {
  const sum = d.terms.map(
    (t) => `${+(t.burst_bits / 1e6).toFixed(3)} Mbit / ${mbit(t.residual_bps)} (${t.slice_name})`,
  );
  return (
    <Table.Tr data-testid={`admission-${d.slice_name}-${d.lane ?? "all"}`}>
      <Table.Td>
        {d.slice_name}
        {d.lane != null ? ` · lane ${d.lane}` : ""}
      </Table.Td>
      <Table.Td>{sum.join(" + ")}</Table.Td>
      <Table.Td c={d.ok ? undefined : "red"}>
        {ms(d.worst_delay_ms)}
        {d.delay_bound_ms != null ? ` (bound ${d.delay_bound_ms} ms)` : ""}
      </Table.Td>
    </Table.Tr>
  );
}

export function AdmissionDetails({ problem }: { problem: unknown }) {
  const backends = admissionOf(problem);
  if (!backends) return null;
  return (
    <Alert color="red" title="Admission refused: the numbers" data-testid="admission-details">
      {backends
        .filter((b) => !b.ok)
        .map((b) => (
          <div key={b.backend_id}>
            <Text fw={600}>
              Backend {b.backend_name}: link {mbit(b.capacity_bps)}
            </Text>
            <Text size="sm" c={b.guaranteed.ok ? undefined : "red"}>
              Guaranteed rates: {b.guaranteed.terms.map(term).join(" + ") || "none"} = {mbit(b.guaranteed.sum_bps)} of{" "}
              {mbit(b.guaranteed.limit_bps)}
            </Text>
            {(b.ports ?? []).map((p) => (
              <Text
                key={p.port}
                size="sm"
                c={p.ok || p.waived ? undefined : "red"}
                data-testid={`admission-port-${p.port}`}>
                Port {p.port}: {p.terms.map((t) => `${mbit(t.guaranteed_bps)} (${t.slice_name})`).join(" + ") || "none"}{" "}
                = {mbit(p.sum_bps)} of {mbit(p.capacity_bps)}
                {p.waived ? " (admitted by an operator)" : ""}
              </Text>
            ))}
            {(b.subscribers ?? [])
              .filter((m) => !m.ok)
              .map((m) => (
                <Text
                  key={m.slice_id}
                  size="sm"
                  c={m.waived ? undefined : "red"}
                  data-testid={`admission-subscribers-${m.slice_name}`}>
                  Slice {m.slice_name}: its {m.count} subscribers' guarantees = {mbit(m.sum_bps)}
                  {m.rate_limit_bps != null ? `, above its rate limit of ${mbit(m.rate_limit_bps)}` : ""}
                </Text>
              ))}
            <Table aria-label={`Worst-case delays on ${b.backend_name}`}>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Slice · lane</Table.Th>
                  <Table.Th>Busy periods (Eq. 1–3)</Table.Th>
                  <Table.Th>Worst case</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {b.delay.map((d) => (
                  <LaneRow key={`${d.slice_id}-${d.lane}`} d={d} />
                ))}
              </Table.Tbody>
            </Table>
            {b.unpoliced.length > 0 && (
              <List size="sm">
                {b.unpoliced.map((u) => (
                  <List.Item key={u.slice_name}>
                    {u.slice_name}: {u.why}
                  </List.Item>
                ))}
              </List>
            )}
          </div>
        ))}
    </Alert>
  );
}
