import { useState, type FormEvent } from "react";
import { Alert, Button, Center, Paper, PasswordInput, Stack, TextInput, Title } from "@mantine/core";
import { Navigate, useNavigate } from "react-router";
import { ApiProblem } from "../../api/client";
import { useSession } from "../../auth/session";

export function LoginPage() {
  const { login, loggedIn } = useSession();
  const navigate = useNavigate();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  if (loggedIn) return <Navigate to="/home" replace />;

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await login(username, password);
      navigate("/home", { replace: true });
    } catch (err) {
      setError(err instanceof ApiProblem ? err.detail || err.title : "Cannot reach the server");
    } finally {
      setBusy(false);
    }
  }

  return (
    <Center mih="100vh" p="md">
      <Paper withBorder shadow="sm" p="xl" w={380} component="main">
        <form onSubmit={submit} aria-label="Log in">
          <Stack>
            <Title order={1} size="h3">
              sliceportal — log in
            </Title>
            {error && (
              <Alert color="red" role="alert">
                {error}
              </Alert>
            )}
            <TextInput
              label="Username"
              autoComplete="username"
              required
              value={username}
              onChange={(e) => setUsername(e.currentTarget.value)}
              autoFocus
            />
            <PasswordInput
              label="Password"
              autoComplete="current-password"
              required
              value={password}
              onChange={(e) => setPassword(e.currentTarget.value)}
            />
            <Button type="submit" loading={busy}>
              Log in
            </Button>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
