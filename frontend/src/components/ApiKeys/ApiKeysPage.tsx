// Integrator API keys: create with scopes (the secret is shown once), list, revoke.
import { useState, type FormEvent } from "react";
import {
  Alert,
  Anchor,
  Badge,
  Button,
  Checkbox,
  Code,
  CopyButton,
  Group,
  Paper,
  Stack,
  TextInput,
  Title,
} from "@mantine/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, ApiProblem, unwrap, type Schemas } from "../../api/client";
import { PageTitle } from "../common/PageTitle";
import { DataTable, type Column } from "../common/DataTable";
import { ProblemAlert } from "../common/QueryView";
import { Time } from "../common/time";
import { useConfirm } from "../common/Confirm";

type Scope = Schemas["Scope"];
const SCOPES: Scope[] = ["read", "write", "deploy"];

export function ApiKeysPage() {
  const qc = useQueryClient();
  const keys = useQuery({ queryKey: ["api-keys", {}], queryFn: () => unwrap(api.GET("/api/v1/api-keys")) });
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<string[]>(["read"]);
  const [created, setCreated] = useState<Schemas["ApiKeyCreated"] | null>(null);

  const create = useMutation({
    mutationFn: () => unwrap(api.POST("/api/v1/api-keys", { body: { name, scopes: scopes as Scope[] } })),
    onSuccess: async (k) => {
      setCreated(k);
      setName("");
      await qc.invalidateQueries({ queryKey: ["api-keys"] });
    },
  });
  const confirm = useConfirm();
  const askRevoke = (k: { id: number; name: string; prefix: string }) =>
    confirm.ask({
      title: `Revoke API key “${k.name}”?`,
      message:
        `Every client that sends the key ${k.prefix}… is refused from now on. A revoked key cannot be `
        + "restored: the clients need a new key.",
      confirmLabel: "Revoke key",
      action: async () => {
        await unwrap(api.DELETE("/api/v1/api-keys/{key_id}", { params: { path: { key_id: k.id } } }));
        await qc.invalidateQueries({ queryKey: ["api-keys"] });
      },
    });
  const problem = create.error instanceof ApiProblem ? create.error : null;

  function submit(e: FormEvent) {
    e.preventDefault();
    create.mutate();
  }

  const columns: Column<Schemas["ApiKeyPublic"]>[] = [
    { key: "name", header: "Name", cell: (k) => k.name },
    { key: "prefix", header: "Prefix", cell: (k) => `${k.prefix}…`, td: { ff: "monospace" } },
    {
      key: "scopes",
      header: "Scopes",
      cell: (k) =>
        k.scopes.map((s) => (
          <Badge key={s} mr={4} variant="light">
            {s}
          </Badge>
        )),
    },
    { key: "created", header: "Created", cell: (k) => <Time value={k.created_at} /> },
    {
      key: "last_used",
      header: "Last used",
      cell: (k) => (k.last_used_at ? <Time value={k.last_used_at} /> : "never"),
    },
    {
      key: "status",
      header: "Status",
      cell: (k) =>
        k.revoked_at ? (
          <Badge color="gray">revoked</Badge>
        ) : (
          <Button size="xs" color="red" variant="light" onClick={() => askRevoke(k)} aria-label={`Revoke ${k.name}`}>
            Revoke
          </Button>
        ),
    },
  ];
  return (
    <>
      <PageTitle
        actions={
          <Anchor href="/api/v1/docs" target="_blank" rel="noreferrer">
            API documentation (OpenAPI)
          </Anchor>
        }>
        API keys
      </PageTitle>
      <Paper withBorder p="md" mb="md">
        <form onSubmit={submit} aria-label="New API key">
          <Stack>
            <Title order={2} size="h4">
              New key
            </Title>
            {create.isError && <ProblemAlert error={create.error} />}
            <TextInput
              label="Key name"
              required
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              error={problem?.fieldMessage("name")}
              maw={360}
            />
            <Checkbox.Group label="Scopes" value={scopes} onChange={setScopes} error={problem?.fieldMessage("scopes")}>
              <Group mt="xs">
                {SCOPES.map((s) => (
                  <Checkbox key={s} value={s} label={s} />
                ))}
              </Group>
            </Checkbox.Group>
            <Group>
              <Button type="submit" loading={create.isPending}>
                Create key
              </Button>
            </Group>
          </Stack>
        </form>
      </Paper>
      {created && (
        <Alert
          color="yellow"
          title={`Key “${created.name}” created — copy it now, it is not shown again`}
          mb="md"
          withCloseButton
          onClose={() => setCreated(null)}
          closeButtonLabel="Hide the secret">
          <Group>
            <Code data-testid="api-key-secret" style={{ wordBreak: "break-all" }}>
              {created.secret}
            </Code>
            <CopyButton value={created.secret}>
              {({ copied, copy }) => (
                <Button size="xs" onClick={copy}>
                  {copied ? "Copied" : "Copy"}
                </Button>
              )}
            </CopyButton>
          </Group>
          <Code block mt="xs">{`curl -H "X-Api-Key: ${created.secret}" ${window.location.origin}/api/v1/slices`}</Code>
        </Alert>
      )}
      {confirm.dialog}
      <DataTable label="API keys" query={keys} rowKey={(k) => k.id} minWidth={600} columns={columns} />
    </>
  );
}
