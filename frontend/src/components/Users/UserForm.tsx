// Create a user, or change one: full name, a new password (reset), active or disabled.
// The API's field errors appear on their fields; a tenant user must name its tenant.
import { useState, type FormEvent } from "react";
import { Button, Group, PasswordInput, Select, Stack, Switch, TextInput } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, ApiProblem, unwrap, type Schemas } from "../../api/client";
import { mapProblem } from "../common/fieldErrors";
import { ProblemAlert } from "../common/QueryView";
import { useAllTenants } from "../Tenants/queries";

type User = Schemas["UserPublic"];
type Role = Schemas["Role"];
const FIELDS = ["username", "full_name", "role", "tenant_id", "password", "is_active"] as const;
export const PASSWORD_MIN = 10;

export function UserForm({ user, onDone }: { user?: User; onDone: () => void }) {
  const qc = useQueryClient();
  const tenants = useAllTenants();
  const [username, setUsername] = useState(user?.username ?? "");
  const [fullName, setFullName] = useState(user?.full_name ?? "");
  const [role, setRole] = useState<Role>(user?.role ?? "tenant");
  const [tenantId, setTenantId] = useState<string | null>(user?.tenant_id ? String(user.tenant_id) : null);
  const [password, setPassword] = useState("");
  const [active, setActive] = useState(user?.is_active ?? true);
  const [submitted, setSubmitted] = useState(false);

  const local: Partial<Record<(typeof FIELDS)[number], string>> = {
    username: user || /^[A-Za-z0-9_.@-]{2,80}$/.test(username) ? undefined : "2–80 letters, digits or . _ @ -",
    tenant_id: role === "tenant" && !tenantId ? "A tenant user belongs to a tenant: choose it." : undefined,
    password:
      (user ? password !== "" : true) && password.length < PASSWORD_MIN
        ? `At least ${PASSWORD_MIN} characters.`
        : undefined,
  };

  const save = useMutation({
    mutationFn: () =>
      user
        ? unwrap(
            api.PATCH("/api/v1/users/{user_id}", {
              params: { path: { user_id: user.id } },
              body: {
                full_name: fullName,
                is_active: active,
                ...(password ? { password } : {}),
                version: user.version,
              },
            }),
          )
        : unwrap(
            api.POST("/api/v1/users", {
              body: {
                username,
                full_name: fullName,
                role,
                password,
                tenant_id: role === "tenant" ? Number(tenantId) : null,
              },
            }),
          ),
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ["users"] });
      onDone();
    },
  });
  const remote = mapProblem(save.error instanceof ApiProblem ? save.error : null, FIELDS).byField;
  const err = (f: (typeof FIELDS)[number]) => (submitted ? local[f] : undefined) ?? remote[f];

  function submit(e: FormEvent) {
    e.preventDefault();
    setSubmitted(true);
    if (!Object.values(local).some(Boolean)) save.mutate();
  }

  return (
    <form onSubmit={submit} aria-label={user ? `Edit user ${user.username}` : "New user"} noValidate>
      <Stack>
        {save.isError && <ProblemAlert error={save.error} shownOnFields={FIELDS} />}
        <TextInput
          label="Username"
          required={!user}
          disabled={!!user}
          value={username}
          autoComplete="off"
          onChange={(e) => setUsername(e.currentTarget.value.trim())}
          error={err("username")}
        />
        <TextInput
          label="Full name"
          value={fullName}
          onChange={(e) => setFullName(e.currentTarget.value)}
          error={err("full_name")}
        />
        <Select
          label="Role"
          required
          disabled={!!user}
          allowDeselect={false}
          data={[
            { value: "operator", label: "Operator" },
            { value: "tenant", label: "Tenant" },
            { value: "integrator", label: "Integrator" },
          ]}
          value={role}
          onChange={(v) => v && setRole(v as Role)}
          error={err("role")}
          description={user ? "A user's role and tenant are fixed; create a new user for another role." : undefined}
        />
        {role === "tenant" && (
          <Select
            label="Tenant"
            required
            disabled={!!user}
            searchable
            data={(tenants.data?.data ?? []).map((t) => ({ value: String(t.id), label: t.name }))}
            value={tenantId}
            onChange={setTenantId}
            error={err("tenant_id")}
          />
        )}
        <PasswordInput
          label={user ? "New password (reset)" : "Password"}
          required={!user}
          autoComplete="new-password"
          description={
            user
              ? "Leave empty to keep the current password. A new one ends the user's sessions and revokes their API keys."
              : `At least ${PASSWORD_MIN} characters.`
          }
          value={password}
          onChange={(e) => setPassword(e.currentTarget.value)}
          error={err("password")}
        />
        {user && (
          <Switch
            label="Active (can log in)"
            checked={active}
            onChange={(e) => setActive(e.currentTarget.checked)}
            error={err("is_active")}
          />
        )}
        <Group justify="flex-end">
          <Button variant="default" onClick={onDone}>
            Cancel
          </Button>
          <Button type="submit" loading={save.isPending}>
            {user ? "Save" : "Create user"}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
