// Slice creation wizard: tenant → slice type → SLA → services (lane mapping) → subscribers → backend.
// Keyboard: every step opens on its own heading (focused when the step changes), Enter in a field
// goes to the next step (creates on the last), Escape outside a drop-down goes back one step; a
// refusal from the API opens the step that holds the first field it names and focuses that field.
import { useEffect, useRef, useState, type KeyboardEvent } from "react";
import {
  Alert,
  Button,
  Checkbox,
  Group,
  MultiSelect,
  Radio,
  Select,
  SimpleGrid,
  Stack,
  Stepper,
  Text,
  TextInput,
  Title,
  Paper,
} from "@mantine/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useNavigate } from "react-router";
import { api, ApiProblem, unwrap } from "../../api/client";
import { LaneStrip } from "../common/LaneStrip";
import { PageTitle } from "../common/PageTitle";
import { ProblemAlert } from "../common/QueryView";
import { useSliceTypes } from "../SliceTypes/queries";
import { useAllTenants } from "../Tenants/queries";
import { useSession } from "../../auth/session";
import { AdmissionDetails } from "./AdmissionDetails";
import { AdmissionOverride, overrideHeader } from "./AdmissionOverride";
import { statusWord } from "../common/statusWords";
import { useBackends } from "./queries";
import { servicesError, ServicesEditor, toServiceCreate, type ServiceDraft } from "./ServicesEditor";
import { slaError, SlaFields, type Sla } from "./SlaFields";

export const STEPS = ["Tenant", "Slice type", "SLA", "Services", "Subscribers", "Backend"] as const;

/** The wizard step that holds an API field path ("services.1.dst_ports" → 3), or undefined. */
export function stepOfField(field: string): number | undefined {
  const head = field.split(".")[0] ?? "";
  if (head === "tenant_id") return 0;
  if (head === "slice_type_id") return 1;
  if (["name", "description", "path_mode", "sla"].includes(head)) return 2;
  if (head === "services") return 3;
  if (head === "backend_ids") return 5;
  return undefined;
}

/** Escape on a combobox (or inside its list) closes the drop-down; it must not also leave the step. */
function isInsideDropdown(target: EventTarget | null): boolean {
  return (
    target instanceof Element
    && target.closest('[role="combobox"], [role="listbox"], [aria-haspopup="listbox"]') !== null
  );
}

const EMPTY_SLA: Sla = {
  guaranteed_mbps: null,
  rate_limit_mbps: 100,
  max_delay_ms: 20,
  ecn_delay_ms: 5,
  max_loss_pct: 1,
  max_jitter_ms: 10,
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
  const subsQuery = {
    tenant_id: Number(tenantId),
    limit: 50,
    sort: "imsi",
    ...(subscriberSearch ? { q: subscriberSearch } : {}),
  };
  const subscribers = useQuery({
    queryKey: ["subscribers", subsQuery],
    queryFn: () => unwrap(api.GET("/api/v1/subscribers", { params: { query: subsQuery } })),
    enabled: tenantId !== null,
  });

  const { me } = useSession();
  const create = useMutation({
    // reason: after a refusal by admission control, an operator re-sends with Admission-Override
    mutationFn: async (reason?: string) => {
      const slice = await unwrap(
        api.POST("/api/v1/slices", {
          params: { header: overrideHeader(reason) },
          body: {
            name,
            description,
            path_mode: pathMode,
            tenant_id: Number(tenantId),
            slice_type_id: Number(typeId),
            sla,
            services: services.map(toServiceCreate),
            backend_ids: backendIds.map(Number),
          },
        }),
      );
      // Membership lives on the subscriber; add the new slice to each chosen one.
      for (const sid of subscriberIds) {
        const sub = await unwrap(
          api.GET("/api/v1/subscribers/{subscriber_id}", { params: { path: { subscriber_id: Number(sid) } } }),
        );
        await unwrap(
          api.PATCH("/api/v1/subscribers/{subscriber_id}", {
            params: { path: { subscriber_id: sub.id } },
            body: { slice_ids: [...sub.slice_ids, slice.id], version: sub.version },
          }),
        );
      }
      return slice;
    },
    onSuccess: async (slice, reason) => {
      await qc.invalidateQueries({ queryKey: ["slices"] });
      await qc.invalidateQueries({ queryKey: ["subscribers"] });
      // the slice page shows the audit entry of the override
      navigate(`/slices/${slice.id}`, { state: { overridden: reason !== undefined } });
    },
  });
  const problem = create.error instanceof ApiProblem ? create.error : null;
  const err = (f: string) => problem?.fieldMessage(f);
  const [blocked, setBlocked] = useState<string | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const body = useRef<HTMLFormElement>(null);
  const moved = useRef(false);
  // A new step: its heading takes the focus (not on first render, where the page title leads).
  useEffect(() => {
    if (moved.current) heading.current?.focus();
  }, [step]);
  // A refusal: open the step of the first field it names and put the focus on that field.
  useEffect(() => {
    if (!create.error) return;
    const first = (problem?.errors ?? []).map((e) => stepOfField(e.field)).find((n) => n !== undefined);
    if (first !== undefined && first !== step) {
      moved.current = false;
      setStep(first);
    }
    requestAnimationFrame(() => {
      const invalid = body.current?.querySelector<HTMLElement>('[aria-invalid="true"]');
      (invalid ?? document.querySelector<HTMLElement>('[data-wizard-problem] [role="alert"]'))?.focus();
    });
  }, [create.error]); // eslint-disable-line react-hooks/exhaustive-deps

  const chooseType = (id: string | null) => {
    setTypeId(id);
    const t = types.data?.data.find((x) => String(x.id) === id);
    // One service per lane as a starting point, like seed 000 Table 2.
    if (t)
      setServices(
        t.lanes.map((lane, i) => ({
          name: `class-${lane}`,
          lane,
          portLo: 5000 + 8 * i,
          portHi: 5007 + 8 * i,
          dscp: "",
          protocol: "any",
        })),
      );
  };

  const stepProblem = [
    tenantId === null ? "Choose a tenant to continue." : undefined,
    typeId === null ? "Choose a slice type to continue." : undefined,
    name.trim() === "" ? "Give the slice a name to continue." : slaError(sla),
    servicesError(services),
    undefined,
    undefined,
  ][step];
  const goTo = (n: number) => {
    moved.current = true;
    setBlocked(null);
    setStep(n);
  };
  const next = () => {
    if (stepProblem) {
      setBlocked(stepProblem);
      return;
    }
    if (step < STEPS.length - 1) goTo(step + 1);
    else create.mutate(undefined);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLFormElement>) => {
    if (e.key === "Escape" && step > 0 && !e.defaultPrevented && !isInsideDropdown(e.target)) {
      e.preventDefault();
      goTo(step - 1);
    }
  };

  return (
    <>
      <PageTitle>New slice</PageTitle>
      {create.isError && (
        <div data-wizard-problem tabIndex={-1}>
          <ProblemAlert error={create.error} />
          <AdmissionDetails problem={create.error} />
          <AdmissionOverride
            problem={create.error}
            canOverride={me?.role === "operator"}
            pending={create.isPending}
            onOverride={(reason) => create.mutate(reason)}
          />
        </div>
      )}
      <form
        ref={body}
        aria-label="New slice"
        noValidate
        onKeyDown={onKeyDown}
        onSubmit={(e) => {
          e.preventDefault();
          next();
        }}>
        <Stepper active={step} onStepClick={goTo} allowNextStepsSelect={false} mt="md" size="sm">
          <Stepper.Step label="Tenant">
            <Title order={2} size="h4" mb="sm" ref={step === 0 ? heading : undefined} tabIndex={-1}>
              Step 1 of {STEPS.length}: Tenant
            </Title>
            <Select
              label="Tenant"
              placeholder="Choose a tenant"
              searchable
              required
              data={(tenants.data?.data ?? []).map((t) => ({ value: String(t.id), label: t.name }))}
              value={tenantId}
              onChange={(v) => {
                setTenantId(v);
                setSubscriberIds([]);
              }}
              error={err("tenant_id")}
              maw={400}
            />
          </Stepper.Step>
          <Stepper.Step label="Slice type">
            <Title order={2} size="h4" mb="sm" ref={step === 1 ? heading : undefined} tabIndex={-1}>
              Step 2 of {STEPS.length}: Slice type
            </Title>
            <Radio.Group label="Slice type" value={typeId} onChange={chooseType} required error={err("slice_type_id")}>
              <SimpleGrid cols={{ base: 1, sm: 2 }} mt="xs">
                {(types.data?.data ?? []).map((t) => (
                  <Paper key={t.id} withBorder p="sm">
                    <Radio value={String(t.id)} label={t.name} description={t.use_cases.join(", ")} />
                    <Group mt="xs">
                      <LaneStrip lanes={t.lanes} label={t.name} />
                    </Group>
                  </Paper>
                ))}
              </SimpleGrid>
            </Radio.Group>
          </Stepper.Step>
          <Stepper.Step label="SLA">
            <Title order={2} size="h4" mb="sm" ref={step === 2 ? heading : undefined} tabIndex={-1}>
              Step 3 of {STEPS.length}: SLA
            </Title>
            <Stack>
              <TextInput
                label="Slice name"
                required
                value={name}
                onChange={(e) => setName(e.currentTarget.value)}
                error={err("name")}
                maw={400}
              />
              <TextInput
                label="Description"
                value={description}
                onChange={(e) => setDescription(e.currentTarget.value)}
                maw={600}
              />
              <Select
                label="RR path allocation"
                maw={300}
                allowDeselect={false}
                value={pathMode}
                data={[
                  { value: "per_slice", label: "One path per slice" },
                  { value: "per_user_group", label: "One path per user group" },
                ]}
                onChange={(v) => (v === "per_slice" || v === "per_user_group") && setPathMode(v)}
              />
              <SlaFields value={sla} onChange={setSla} error={(f) => err(`sla.${f}`) ?? err(f)} />
            </Stack>
          </Stepper.Step>
          <Stepper.Step label="Services">
            <Title order={2} size="h4" mb="sm" ref={step === 3 ? heading : undefined} tabIndex={-1}>
              Step 4 of {STEPS.length}: Services
            </Title>
            <Text size="sm" c="dimmed" mb="xs">
              Lanes available to a {type?.name ?? "slice"}: {type?.lanes.join(", ")}
            </Text>
            <ServicesEditor lanes={type?.lanes ?? []} value={services} onChange={setServices} error={err} />
          </Stepper.Step>
          <Stepper.Step label="Subscribers">
            <Title order={2} size="h4" mb="sm" ref={step === 4 ? heading : undefined} tabIndex={-1}>
              Step 5 of {STEPS.length}: Subscribers
            </Title>
            <MultiSelect
              label="Subscribers in this slice"
              placeholder="Search by IMSI or address"
              searchable
              searchValue={subscriberSearch}
              onSearchChange={setSubscriberSearch}
              filter={({ options }) => options}
              data={(subscribers.data?.data ?? [])
                .map((s) => ({ value: String(s.id), label: `${s.imsi} (${s.ue_ip})` }))
                .concat(
                  subscriberIds
                    .filter((id) => !subscribers.data?.data.some((s) => String(s.id) === id))
                    .map((id) => ({ value: id, label: `#${id}` })),
                )}
              value={subscriberIds}
              onChange={setSubscriberIds}
              maw={600}
            />
            <Text size="sm" c="dimmed" mt="xs">
              Many subscribers? Import a CSV on the Subscribers page with this slice's name.
            </Text>
          </Stepper.Step>
          <Stepper.Step label="Backend">
            <Title order={2} size="h4" mb="sm" ref={step === 5 ? heading : undefined} tabIndex={-1}>
              Step 6 of {STEPS.length}: Backend
            </Title>
            <Checkbox.Group
              label="Deploy on backends"
              value={backendIds}
              onChange={setBackendIds}
              error={err("backend_ids")}>
              <Stack mt="xs">
                {(backends.data?.data ?? []).map((b) => (
                  <Checkbox
                    key={b.id}
                    value={String(b.id)}
                    label={`${b.name} (${b.driver}, ${b.paths}×${b.lanes} queues, ${statusWord("health", b.health).label})`}
                  />
                ))}
                {backends.data?.count === 0 && <Alert color="gray">No backends registered yet.</Alert>}
              </Stack>
            </Checkbox.Group>
          </Stepper.Step>
        </Stepper>
        {blocked && stepProblem && (
          <Alert color="orange" role="alert" mt="md">
            {stepProblem}
          </Alert>
        )}
        <Group justify="space-between" mt="xl">
          <Button variant="default" disabled={step === 0} onClick={() => goTo(step - 1)}>
            Back
          </Button>
          {step < STEPS.length - 1 ? (
            <Button type="submit">Next</Button>
          ) : (
            <Button type="submit" loading={create.isPending}>
              Create slice
            </Button>
          )}
        </Group>
        <Text size="xs" c="dimmed" mt="xs">
          Keyboard: Enter goes to the next step, Escape back to the previous one.
        </Text>
      </form>
    </>
  );
}
