// An operator's way past admission control: when a request is refused with the computation
// (409 "Admission refused"), "Override with reason" re-sends the same request with the
// Admission-Override header (api/admission.py: operators only, 1..500 characters); the API
// audits the reason with the computation it overrode, and OverrideAudit shows that entry.
import { useState } from "react";
import { Alert, Button, Group, List, Text, TextInput } from "@mantine/core";
import { useQuery } from "@tanstack/react-query";
import { api, ApiProblem, unwrap } from "../../api/client";
import { Time } from "../common/time";
import { admissionOf } from "./AdmissionDetails";

/** The header's length limit (services/admission.py OVERRIDE_MAX; checked against openapi.json in a test). */
export const OVERRIDE_MAX = 500;

/** What is wrong with a reason as typed, or undefined. */
export function overrideReasonError(reason: string): string | undefined {
  const r = reason.trim();
  if (r === "") return "Say why this is admitted anyway: the reason is recorded in the audit log.";
  if (r.length > OVERRIDE_MAX) return `The reason must be at most ${OVERRIDE_MAX} characters; it has ${r.length}.`;
  // an HTTP header value: no line breaks or other control characters
  if ([...r].some((c) => c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127))
    return "The reason must be one line of text.";
  return undefined;
}

/** The header that carries the reason, for openapi-fetch's typed header parameters. */
export const overrideHeader = (reason: string | undefined) =>
  reason === undefined ? {} : { "admission-override": reason };

export function AdmissionOverride({
  problem,
  canOverride,
  pending,
  onOverride,
}: {
  problem: unknown;
  canOverride: boolean;
  pending: boolean;
  onOverride: (reason: string) => void;
}) {
  const [reason, setReason] = useState("");
  const [tried, setTried] = useState(false);
  if (!admissionOf(problem) || !canOverride) return null;
  const error = tried ? overrideReasonError(reason) : undefined;
  const server = problem instanceof ApiProblem ? problem.fieldMessage("admission_override") : undefined;
  return (
    <form
      aria-label="Override admission control"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        setTried(true);
        if (overrideReasonError(reason) === undefined) onOverride(reason.trim());
      }}>
      <Group align="end">
        <TextInput
          label="Reason for admitting it anyway"
          description="Operators only; recorded in the audit log"
          value={reason}
          onChange={(e) => setReason(e.currentTarget.value)}
          error={error ?? server}
          w={460}
          data-testid="override-reason"
        />
        <Button type="submit" color="orange" variant="light" loading={pending}>
          Override with reason
        </Button>
      </Group>
    </form>
  );
}

interface OverrideAfter {
  reason?: string;
  action?: string;
  refusals?: string[];
}

/** The audit entry of the latest admission override of one object (slice, backend or subscriber). */
export function OverrideAudit({
  objectType,
  objectId,
}: {
  objectType: "slice" | "backend" | "subscriber";
  objectId: number;
}) {
  const query = { object_type: objectType, object_id: objectId, q: "admission_override", sort: "-id", limit: 1 };
  const audit = useQuery({
    queryKey: ["audit", query],
    queryFn: () => unwrap(api.GET("/api/v1/audit", { params: { query } })),
  });
  const entry = audit.data?.data[0];
  if (!entry) return null;
  const after = (entry.after ?? {}) as OverrideAfter;
  return (
    <Alert color="orange" title="Admitted over admission control's refusal" data-testid="override-audit">
      <Text size="sm">
        Audit entry #{entry.id}: {entry.action} ({after.action}) of {entry.object_type} {entry.object_id} by{" "}
        {entry.actor} at <Time value={entry.ts} />
      </Text>
      <Text size="sm">
        Reason: <b>{after.reason}</b>
      </Text>
      {(after.refusals ?? []).length > 0 && (
        <List size="sm">
          {(after.refusals ?? []).map((r, i) => (
            <List.Item key={i}>{r}</List.Item>
          ))}
        </List>
      )}
    </Alert>
  );
}
