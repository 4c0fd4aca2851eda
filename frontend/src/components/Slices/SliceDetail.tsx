// One slice: its SLA (editable by operators), services and live KPIs.
import { useState } from "react";
import { Button, Group, Paper, Stack, Table, Text } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useLocation, useNavigate, useParams } from "react-router";
import { api, ApiProblem, unwrap, type Schemas } from "../../api/client";
import { useSession } from "../../auth/session";
import { useConfirm } from "../common/Confirm";
import { LaneStrip } from "../common/LaneStrip";
import { PageTitle, Section } from "../common/PageTitle";
import { NotFound, ProblemAlert, QueryView } from "../common/QueryView";
import { SliceIntents } from "../Intents/SliceIntents";
import { SlaHistory } from "../Kpis/SlaHistory";
import { SliceKpis } from "../Kpis/SliceKpis";
import { useKpiStream } from "../Kpis/kpiStream";
import { useSlice, useSliceStatus } from "./queries";
import { SlaFields, SLA_FIELDS, type Sla } from "./SlaFields";
import { AdmissionDetails } from "./AdmissionDetails";
import { AdmissionOverride, OverrideAudit, overrideHeader } from "./AdmissionOverride";
import { SliceStatusPanel } from "./SliceStatusPanel";
import { StateBadge } from "./StateBadge";
import { BackendsEditor, ServicesEdit, ServicesTable } from "./SliceEdit";

type Slice = Schemas["SlicePublic"];

/** ``onOverridden``: an operator's override was accepted (the page then shows its audit entry). */
function SlaEditor({
  slice,
  canOverride,
  onOverridden,
}: {
  slice: Slice;
  canOverride: boolean;
  onOverridden: () => void;
}) {
  const qc = useQueryClient();
  const [sla, setSla] = useState<Sla>(slice.sla);
  const save = useMutation({
    // reason: re-sent with the Admission-Override header after a refusal
    mutationFn: (reason?: string) =>
      unwrap(
        api.PATCH("/api/v1/slices/{slice_id}", {
          params: { path: { slice_id: slice.id }, header: overrideHeader(reason) },
          body: { sla, version: slice.version },
        }),
      ),
    onSuccess: async (_data, reason) => {
      if (reason !== undefined) onOverridden();
      await qc.invalidateQueries({ queryKey: ["slices"] });
      await qc.invalidateQueries({ queryKey: ["audit"] });
    },
  });
  const problem = save.error instanceof ApiProblem ? save.error : null;
  return (
    <Stack>
      {save.isError && <ProblemAlert error={save.error} shownOnFields={SLA_FIELDS.map((f) => f.key)} />}
      <SlaFields value={sla} onChange={setSla} error={(f) => problem?.fieldMessage(f)} />
      <AdmissionDetails problem={save.error} />
      <AdmissionOverride
        problem={save.error}
        canOverride={canOverride}
        pending={save.isPending}
        onOverride={(reason) => save.mutate(reason)}
      />
      <Group justify="flex-end">
        <Button loading={save.isPending} onClick={() => save.mutate(undefined)}>
          Save SLA
        </Button>
      </Group>
    </Stack>
  );
}

/** Delete with a confirmation that says what goes with the slice, and why it is refused while on backends. */
function DeleteSlice({ slice }: { slice: Slice }) {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const confirm = useConfirm();
  const on = slice.status.map((b) => b.backend_name);
  const ask = () =>
    confirm.ask({
      title: `Delete slice ${slice.name}?`,
      message: (
        <Stack gap={4}>
          <Text size="sm">
            Its {slice.services.length} {slice.services.length === 1 ? "service" : "services"}, its intents, its KPI and
            SLA history and its subscribers' membership go with it; the subscribers themselves stay.
          </Text>
          {on.length > 0 && (
            <Text size="sm" c="red.8">
              It is assigned to {on.length === 1 ? "backend" : "backends"} {on.join(", ")}, whose rules carry it: the
              deletion is refused until the slice is removed from {on.length === 1 ? "it" : "them"} (Backends, below)
              and deployed.
            </Text>
          )}
        </Stack>
      ),
      confirmLabel: "Delete slice",
      action: async () => {
        await unwrap(api.DELETE("/api/v1/slices/{slice_id}", { params: { path: { slice_id: slice.id } } }));
        await qc.invalidateQueries({ queryKey: ["slices"] });
        navigate("/slices");
      },
    });
  return (
    <>
      {confirm.dialog}
      <Button variant="light" color="red" onClick={ask}>
        Delete slice
      </Button>
    </>
  );
}

export function SliceDetail() {
  const id = Number(useParams().sliceId);
  const slice = useSlice(id);
  const status = useSliceStatus(id); // polled: the header badge follows pushes and samples
  const { me } = useSession();
  // an override made here (SLA edit) or by the wizard that created the slice (router state)
  const location = useLocation();
  const [overridden, setOverridden] = useState(
    () => (location.state as { overridden?: boolean } | null)?.overridden === true,
  );
  useKpiStream(slice.data ? [slice.data.id] : []);
  if (!Number.isSafeInteger(id) || id <= 0) return <NotFound what="slice" />;
  return (
    <QueryView query={slice} what="slice">
      {(s) => (
        <Stack>
          <PageTitle
            actions={
              <Group gap="xs">
                <StateBadge state={status.data?.state ?? s.state} />
                {me?.role === "operator" && <DeleteSlice slice={s} />}
              </Group>
            }>
            Slice {s.name}
          </PageTitle>
          <Group>
            <Text>{s.slice_type_name}</Text>
            <LaneStrip lanes={s.lanes} label={s.slice_type_name} />
          </Group>
          <Section title="Status per backend">
            <SliceStatusPanel sliceId={s.id} />
          </Section>
          <Section title="Live KPIs">
            <SliceKpis slice={s} />
          </Section>
          <Paper withBorder p="md">
            <SlaHistory sliceId={s.id} backendNames={new Map(s.status.map((b) => [b.backend_id, b.backend_name]))} />
          </Paper>
          <Section title="SLA">
            {overridden && me?.role === "operator" && <OverrideAudit objectType="slice" objectId={s.id} />}
            {me?.role === "operator" ? (
              <SlaEditor key={s.version} slice={s} canOverride onOverridden={() => setOverridden(true)} />
            ) : (
              <Table aria-label="SLA">
                <Table.Tbody>
                  {SLA_FIELDS.map((f) => (
                    <Table.Tr key={f.key}>
                      <Table.Th>{f.label}</Table.Th>
                      <Table.Td>
                        {s.sla[f.key] ?? "—"} {s.sla[f.key] != null && f.unit}
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            )}
          </Section>
          <Section title="Services">
            {me?.role === "operator" ? <ServicesEdit slice={s} /> : <ServicesTable services={s.services} />}
          </Section>
          <Section title="Intents">
            <SliceIntents sliceId={s.id} sliceName={s.name} canDelete={me?.role === "operator"} />
          </Section>
          {me?.role === "operator" && (
            <Section title="Backends">
              <BackendsEditor key={s.version} slice={s} />
            </Section>
          )}
        </Stack>
      )}
    </QueryView>
  );
}
