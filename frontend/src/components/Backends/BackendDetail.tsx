// One backend: rule preview (native entries, usage against capacity), deploy with live progress,
// and the deployment history with diffs and rollback.
import { useState } from "react";
import {
  Alert,
  Badge,
  Button,
  Code,
  Group,
  NumberInput,
  Progress,
  SimpleGrid,
  Stack,
  Text,
  Title,
} from "@mantine/core";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { useParams } from "react-router";
import { api, ApiProblem, unwrap } from "../../api/client";
import { useConfirm } from "../common/Confirm";
import { DataTable } from "../common/DataTable";
import { NO_CLAMP, rangeError } from "../common/numberRange";
import { PageTitle, Section } from "../common/PageTitle";
import { ProblemAlert, QueryView } from "../common/QueryView";
import { StatusBadge } from "../common/statusWords";
import { Time } from "../common/time";
import { queryOf, tablePaging, type PageParams } from "../common/usePaged";
import { useSession } from "../../auth/session";
import { AdmissionDetails } from "../Slices/AdmissionDetails";
import { AdmissionOverride, OverrideAudit } from "../Slices/AdmissionOverride";
import { CapacityEditor } from "./CapacityEditor";
import { streamDeploy, type Deployment, type ProgressEvent } from "./deployStream";
import { EquivalenceBadge } from "./EquivalenceBadge";
import { CompareRuleSets, PreviewDiff } from "./RuleSetDiff";

function Preview({ backendId }: { backendId: number }) {
  const preview = useQuery({
    queryKey: ["preview", { backendId }],
    queryFn: () =>
      unwrap(api.GET("/api/v1/backends/{backend_id}/preview", { params: { path: { backend_id: backendId } } })),
  });
  return (
    <QueryView query={preview} what="preview">
      {(p) => (
        <Stack>
          <Group gap="xl">
            <Text>
              Driver <b>{p.driver}</b>
            </Text>
            <Text data-testid="preview-rules">
              Rules: {p.rules_before} IR → <b>{p.rules_after}</b> native
            </Text>
            <Text>Flows {p.flows}</Text>
            <Text>
              {p.paths} paths × {p.lanes} lanes
            </Text>
          </Group>
          <EquivalenceBadge equivalence={p.equivalence} />
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            {Object.entries(p.usage).map(([table, u]) => {
              const pct = u.capacity > 0 ? (100 * u.used) / u.capacity : 0;
              return (
                <div key={table}>
                  <Text size="sm">
                    {table}: {u.used} / {u.capacity} ({pct.toFixed(1)} %)
                  </Text>
                  <Progress
                    value={pct}
                    color={pct > 90 ? "red" : pct > 70 ? "orange" : "blue"}
                    aria-label={`${table} usage`}
                  />
                </div>
              );
            })}
          </SimpleGrid>
          {Object.entries(p.tables).map(([table, entries]) => (
            <details key={table}>
              <summary>
                {table}: {Array.isArray(entries) ? entries.length : 0} native entries
              </summary>
              <Code block mah={300} style={{ overflow: "auto" }}>
                {JSON.stringify(entries, null, 1).slice(0, 20000)}
              </Code>
            </details>
          ))}
        </Stack>
      )}
    </QueryView>
  );
}

function diffSummary(diff: Record<string, unknown>): string {
  const tables = (diff.tables ?? diff) as Record<string, unknown>;
  const parts: string[] = [];
  for (const [name, t] of Object.entries(tables)) {
    if (typeof t !== "object" || t === null) continue;
    const d = t as { added?: unknown[]; removed?: unknown[]; modified?: unknown[] };
    if (!Array.isArray(d.added) && !Array.isArray(d.removed)) continue;
    const [a, r, m] = [d.added?.length ?? 0, d.removed?.length ?? 0, d.modified?.length ?? 0];
    if (a + r + m > 0) parts.push(`${name}: ${a} added, ${r} removed, ${m} changed`);
  }
  return parts.join(", ") || "no changes";
}

const HISTORY_FIRST: PageParams = { page: 1, q: "", sort: "-id", limit: 20 };

function isSuccess(status: string): boolean {
  return status === "succeeded" || status === "success";
}

export function BackendDetail() {
  const id = Number(useParams().backendId);
  const qc = useQueryClient();
  const backend = useQuery({
    queryKey: ["backends", { id }],
    queryFn: () => unwrap(api.GET("/api/v1/backends/{backend_id}", { params: { path: { backend_id: id } } })),
  });
  const history = useQuery({
    queryKey: ["deployments", { id }],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/backends/{backend_id}/deployments", {
          params: { path: { backend_id: id }, query: { sort: "-id", limit: 20 } },
        }),
      ),
  });
  // The table pages and sorts on the server; its first page newest-first is the query above.
  const [histParams, setHistParams] = useState<PageParams>(HISTORY_FIRST);
  const firstPage = histParams.page === 1 && histParams.sort === HISTORY_FIRST.sort;
  const otherPage = useQuery({
    queryKey: ["deployments", { id, ...histParams }],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/backends/{backend_id}/deployments", {
          params: { path: { backend_id: id }, query: queryOf(histParams) },
        }),
      ),
    enabled: !firstPage,
    placeholderData: keepPreviousData,
  });
  const shown = firstPage ? history : otherPage;
  const [progress, setProgress] = useState<ProgressEvent | null>(null);
  const [outcome, setOutcome] = useState<Deployment | null>(null);
  const [failure, setFailure] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [rollbackTo, setRollbackTo] = useState<number | string>("");
  const confirm = useConfirm();
  const { me } = useSession();
  const isOperator = me?.role === "operator";
  // an admission override accepted on this page (deploy or capacities): its audit entry is shown
  const [overridden, setOverridden] = useState(false);
  const deployments = history.data?.data ?? [];
  // The rule set the data plane runs: the newest deployment that succeeded (history is newest first).
  const active = deployments.find((d) => isSuccess(d.status));
  const known = new Set(deployments.filter((d) => isSuccess(d.status)).map((d) => d.rule_set_number));
  const rollbackError =
    rangeError("Rule set", rollbackTo, 1, Number.MAX_SAFE_INTEGER)
    ?? (rollbackTo !== "" && deployments.length > 0 && !known.has(Number(rollbackTo)) && deployments.length < 20
      ? `Rule set ${rollbackTo} was never deployed here.`
      : undefined);

  async function run(url: string, body?: unknown, overrideReason?: string) {
    setBusy(true);
    setOutcome(null);
    setFailure(null);
    setProgress(null);
    try {
      setOutcome(await streamDeploy(url, body, setProgress, overrideReason));
      if (overrideReason !== undefined) setOverridden(true);
    } catch (e) {
      setFailure(e);
    } finally {
      setBusy(false);
      await qc.invalidateQueries({ queryKey: ["deployments"] });
      await qc.invalidateQueries({ queryKey: ["slices"] });
      await qc.invalidateQueries({ queryKey: ["preview"] });
      await qc.invalidateQueries({ queryKey: ["audit"] });
    }
  }

  const askDeploy = (name: string, backendId: number) =>
    confirm.ask({
      title: `Deploy to backend ${name}?`,
      message:
        `The rules on ${name} are replaced by what the current slices, services and subscribers need `
        + "(see the rule preview). Traffic of every slice on this backend follows the new rules at once.",
      confirmLabel: "Deploy now",
      color: "blue",
      action: async () => {
        void run(`/api/v1/backends/${backendId}/deployments`);
      },
    });
  const askRollback = (name: string, backendId: number, ruleSet: number) =>
    confirm.ask({
      title: `Roll back backend ${name} to rule set ${ruleSet}?`,
      message:
        `${name} goes back to the rules of rule set ${ruleSet}`
        + (active ? `, replacing the active rule set ${active.rule_set_number}` : "")
        + ". Traffic of every slice on this backend follows the old rules at once.",
      confirmLabel: `Roll back to rule set ${ruleSet}`,
      color: "orange",
      action: async () => {
        void run(`/api/v1/backends/${backendId}/rollback`, { rule_set: ruleSet });
      },
    });

  return (
    <QueryView query={backend} what="backend">
      {(b) => (
        <Stack>
          {confirm.dialog}
          <PageTitle actions={<StatusBadge kind="health" value={b.health} size="lg" />}>Backend {b.name}</PageTitle>
          <Section title="Rule preview">
            <Preview backendId={b.id} />
          </Section>
          <Section title="Deploy">
            <Group>
              <Button onClick={() => askDeploy(b.name, b.id)} loading={busy}>
                Deploy now
              </Button>
              <NumberInput
                aria-label="Rule set number to roll back to"
                placeholder="rule set #"
                w={160}
                {...NO_CLAMP}
                value={rollbackTo}
                onChange={setRollbackTo}
                error={rollbackError}
              />
              <Button
                variant="light"
                color="orange"
                disabled={busy || rollbackTo === "" || rollbackError !== undefined}
                onClick={() => askRollback(b.name, b.id, Number(rollbackTo))}>
                Roll back
              </Button>
            </Group>
            {active && (
              <Text size="sm" mt="xs" data-testid="active-rule-set">
                Active rule set: <b>{active.rule_set_number}</b>
              </Text>
            )}
            <Title order={3} size="h5" mt="md" mb={4}>
              Changes a deploy would make
            </Title>
            <PreviewDiff backendId={b.id} />
            {progress && (
              <Stack gap={4} mt="sm">
                <Text size="sm" data-testid="deploy-phase">
                  {progress.phase}: {progress.done}/{progress.total} {progress.message}
                </Text>
                <Progress
                  value={progress.total ? (100 * progress.done) / progress.total : 100}
                  aria-label="Deploy progress"
                  animated={busy}
                />
              </Stack>
            )}
            {outcome && (
              <Alert
                mt="sm"
                color={isSuccess(outcome.status) ? "green" : "orange"}
                title={`Deployment ${outcome.status}`}
                data-testid="deploy-outcome">
                {diffSummary(outcome.diff)}
                {outcome.duration_s != null && ` in ${outcome.duration_s.toFixed(2)} s`}
                {outcome.error && <Text c="red">{outcome.error}</Text>}
              </Alert>
            )}
            {failure !== null && <ProblemAlert error={failure instanceof ApiProblem ? failure : String(failure)} />}
            <AdmissionDetails problem={failure} />
            <AdmissionOverride
              problem={failure}
              canOverride={isOperator}
              pending={busy}
              onOverride={(reason) => void run(`/api/v1/backends/${b.id}/deployments`, undefined, reason)}
            />
          </Section>
          <Section title="Capacities (admission control)">
            {overridden && <OverrideAudit objectType="backend" objectId={b.id} />}
            <CapacityEditor
              key={b.version}
              backend={b}
              canOverride={isOperator}
              onOverridden={() => setOverridden(true)}
            />
          </Section>
          <Section title="Deployment history">
            <DataTable
              alignTop
              label="Deployments"
              query={shown}
              {...tablePaging(histParams, (next) => setHistParams({ ...histParams, ...next }))}
              rowKey={(d) => d.id}
              minWidth={700}
              pagerWhenOnePage={false}
              empty="Nothing deployed to this backend yet."
              what="deployment history"
              columns={[
                { key: "id", header: "#", sortable: true, cell: (d) => d.id },
                {
                  key: "rule_set",
                  header: "Rule set",
                  cell: (d) => (
                    <>
                      {d.rule_set_number}
                      {d.id === active?.id && (
                        <Badge ml="xs" size="sm" color="green" variant="light">
                          active
                        </Badge>
                      )}
                      {isSuccess(d.status) && d.rule_set_number !== active?.rule_set_number && (
                        <Button
                          size="compact-xs"
                          variant="subtle"
                          color="orange"
                          ml="xs"
                          disabled={busy}
                          aria-label={`Roll back to rule set ${d.rule_set_number}`}
                          onClick={() => askRollback(b.name, b.id, d.rule_set_number)}>
                          roll back
                        </Button>
                      )}
                    </>
                  ),
                },
                { key: "created_at", header: "When", sortable: true, cell: (d) => <Time value={d.created_at} /> },
                { key: "kind", header: "Kind", cell: (d) => d.kind },
                {
                  key: "status",
                  header: "Status",
                  sortable: true,
                  cell: (d) => `${d.status}${d.rolled_back ? " (rolled back)" : ""}`,
                },
                { key: "actor", header: "Who", cell: (d) => d.actor },
                {
                  key: "diff",
                  header: "Diff",
                  cell: (d) => (
                    <>
                      {diffSummary(d.diff)}
                      {d.error && (
                        <Text c="red" size="xs">
                          {d.error}
                        </Text>
                      )}
                    </>
                  ),
                },
                {
                  key: "duration",
                  header: "Duration",
                  cell: (d) => (d.duration_s != null ? `${d.duration_s.toFixed(2)} s` : "—"),
                },
              ]}
            />
            <Title order={3} size="h5" mt="md" mb={4}>
              Compare rule sets
            </Title>
            <CompareRuleSets
              backendId={b.id}
              numbers={deployments.map((d) => d.rule_set_number)}
              active={active?.rule_set_number}
            />
          </Section>
        </Stack>
      )}
    </QueryView>
  );
}
