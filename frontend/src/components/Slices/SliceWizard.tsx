// Slice creation wizard: tenant → slice type → SLA → services (lane mapping) → subscribers → backend.
import { useState } from "react";
import {
  Alert, Button, Checkbox, Group, MultiSelect, Radio, Select, SimpleGrid, Stack, Stepper, Text, TextInput, Paper,
} from "@mantine/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useNavigate } from "react-router";
import { api, ApiProblem, unwrap } from "../../api/client";
import { LaneStrip } from "../common/LaneStrip";
import { PageTitle } from "../common/PageTitle";
import { ProblemAlert } from "../common/QueryView";
import { useSliceTypes } from "../SliceTypes/queries";
import { useAllTenants } from "../Tenants/queries";
import { useBackends } from "./queries";
import { ServicesEditor, toServiceCreate, type ServiceDraft } from "./ServicesEditor";
import { SlaFields, type Sla } from "./SlaFields";

const EMPTY_SLA: Sla = {
  guaranteed_mbps: null, rate_limit_mbps: 100, max_delay_ms: 20, ecn_delay_ms: 5, max_loss_pct: 1, max_jitter_ms: 10,
};

export function SliceWizard() {
  const navigate = useNavigate();
  const qc = useQueryClient();
  const [step, setStep] = useState(0);
  const [tenantId, setTenantId] = useState<string | null>(null);
  const [typeId, setTypeId] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [pathMode, setPathMode] = useState<"per_slice" | "per_user_group">("per_slice");
  const [sla, setSla] = useState<Sla>(EMPTY_SLA);
  const [services, setServices] = useState<ServiceDraft[]>([]);
  const [subscriberIds, setSubscriberIds] = useState<string[]>([]);
  const [subscriberSearch, setSubscriberSearch] = useState("");
  const [backendIds, setBackendIds] = useState<string[]>([]);

  const tenants = useAllTenants();
  const types = useSliceTypes();
  const backends = useBackends();
  const type = types.data?.data.find((t) => String(t.id) === typeId);
  const subsQuery = { tenant_id: Number(tenantId), limit: 50, sort: "imsi", ...(subscriberSearch ? { q: subscriberSearch } : {}) };
  const subscribers = useQuery({
    queryKey: ["subscribers", subsQuery],
    queryFn: () => unwrap(api.GET("/api/v1/subscribers", { params: { query: subsQuery } })),
    enabled: tenantId !== null,
  });

  const create = useMutation({
    mutationFn: async () => {
      const slice = await unwrap(api.POST("/api/v1/slices", {
        body: {
          name, description, path_mode: pathMode, tenant_id: Number(tenantId), slice_type_id: Number(typeId), sla,
          services: services.map(toServiceCreate), backend_ids: backendIds.map(Number),
        },
      }));
      // Membership lives on the subscriber; add the new slice to each chosen one.
      for (const sid of subscriberIds) {
        const sub = await unwrap(api.GET("/api/v1/subscribers/{subscriber_id}", { params: { path: { subscriber_id: Number(sid) } } }));
        await unwrap(api.PATCH("/api/v1/subscribers/{subscriber_id}", {
          params: { path: { subscriber_id: sub.id } },
          body: { slice_ids: [...sub.slice_ids, slice.id], version: sub.version },
        }));
      }
      return slice;
    },
    onSuccess: async (slice) => {
      await qc.invalidateQueries({ queryKey: ["slices"] });
      await qc.invalidateQueries({ queryKey: ["subscribers"] });
      navigate(`/slices/${slice.id}`);
    },
  });
  const problem = create.error instanceof ApiProblem ? create.error : null;
  const err = (f: string) => problem?.fieldMessage(f);

  const chooseType = (id: string | null) => {
    setTypeId(id);
    const t = types.data?.data.find((x) => String(x.id) === id);
    // One service per lane as a starting point, like seed 000 Table 2.
    if (t) setServices(t.lanes.map((lane, i) => ({ name: `class-${lane}`, lane, portLo: 5000 + 8 * i, portHi: 5007 + 8 * i, dscp: "", protocol: "any" })));
  };

  const canNext = [tenantId !== null, typeId !== null, name.trim() !== "", true, true, true][step] ?? true;

  return (
    <>
      <PageTitle>New slice</PageTitle>
      {create.isError && <ProblemAlert error={create.error} />}
      <Stepper active={step} onStepClick={setStep} allowNextStepsSelect={false} mt="md" size="sm">
        <Stepper.Step label="Tenant">
          <Select label="Tenant" placeholder="Choose a tenant" searchable required
            data={(tenants.data?.data ?? []).map((t) => ({ value: String(t.id), label: t.name }))}
            value={tenantId} onChange={(v) => { setTenantId(v); setSubscriberIds([]); }} error={err("tenant_id")} maw={400} />
        </Stepper.Step>
        <Stepper.Step label="Slice type">
          <Radio.Group label="Slice type" value={typeId} onChange={chooseType} required error={err("slice_type_id")}>
            <SimpleGrid cols={{ base: 1, sm: 2 }} mt="xs">
              {(types.data?.data ?? []).map((t) => (
                <Paper key={t.id} withBorder p="sm">
                  <Radio value={String(t.id)} label={t.name} description={t.use_cases.join(", ")} />
                  <Group mt="xs"><LaneStrip lanes={t.lanes} label={t.name} /></Group>
                </Paper>
              ))}
            </SimpleGrid>
          </Radio.Group>
        </Stepper.Step>
        <Stepper.Step label="SLA">
          <Stack>
            <TextInput label="Slice name" required value={name} onChange={(e) => setName(e.currentTarget.value)} error={err("name")} maw={400} />
            <TextInput label="Description" value={description} onChange={(e) => setDescription(e.currentTarget.value)} maw={600} />
            <Select label="RR path allocation" maw={300} allowDeselect={false} value={pathMode}
              data={[{ value: "per_slice", label: "One path per slice" }, { value: "per_user_group", label: "One path per user group" }]}
              onChange={(v) => (v === "per_slice" || v === "per_user_group") && setPathMode(v)} />
            <SlaFields value={sla} onChange={setSla} error={(f) => err(`sla.${f}`) ?? err(f)} />
          </Stack>
        </Stepper.Step>
        <Stepper.Step label="Services">
          <Text size="sm" c="dimmed" mb="xs">Lanes available to a {type?.name ?? "slice"}: {type?.lanes.join(", ")}</Text>
          <ServicesEditor lanes={type?.lanes ?? []} value={services} onChange={setServices} error={err} />
        </Stepper.Step>
        <Stepper.Step label="Subscribers">
          <MultiSelect label="Subscribers in this slice" placeholder="Search by IMSI or address" searchable
            searchValue={subscriberSearch} onSearchChange={setSubscriberSearch} filter={({ options }) => options}
            data={(subscribers.data?.data ?? []).map((s) => ({ value: String(s.id), label: `${s.imsi} (${s.ue_ip})` }))
              .concat(subscriberIds.filter((id) => !subscribers.data?.data.some((s) => String(s.id) === id)).map((id) => ({ value: id, label: `#${id}` })))}
            value={subscriberIds} onChange={setSubscriberIds} maw={600} />
          <Text size="sm" c="dimmed" mt="xs">Many subscribers? Import a CSV on the Subscribers page with this slice's name.</Text>
        </Stepper.Step>
        <Stepper.Step label="Backend">
          <Checkbox.Group label="Deploy on backends" value={backendIds} onChange={setBackendIds} error={err("backend_ids")}>
            <Stack mt="xs">
              {(backends.data?.data ?? []).map((b) => (
                <Checkbox key={b.id} value={String(b.id)} label={`${b.name} (${b.driver}, ${b.paths}×${b.lanes} queues, ${b.health})`} />
              ))}
              {backends.data?.count === 0 && <Alert color="gray">No backends registered yet.</Alert>}
            </Stack>
          </Checkbox.Group>
        </Stepper.Step>
      </Stepper>
      <Group justify="space-between" mt="xl">
        <Button variant="default" disabled={step === 0} onClick={() => setStep((s) => s - 1)}>Back</Button>
        {step < 5 ? (
          <Button disabled={!canNext} onClick={() => setStep((s) => s + 1)}>Next</Button>
        ) : (
          <Button loading={create.isPending} onClick={() => create.mutate()}>Create slice</Button>
        )}
      </Group>
    </>
  );
}
