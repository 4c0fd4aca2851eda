// CSV import with an upload progress bar (XHR: fetch has no upload progress) and the per-row errors.
// A file whose guarantees admission control refuses (409 with the computation) shows the numbers,
// and an operator may import it anyway with a reason: the same file re-sent with the
// Admission-Override header, as the slice and subscriber forms do.
import { useState } from "react";
import { Alert, Button, FileInput, Group, Progress, Stack, Table, Text } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { accessToken, type Schemas } from "../../api/client";
import { ApiProblem, problemFrom } from "../../api/problem";
import { useSession } from "../../auth/session";
import { csvRowError, problemSummary } from "../common/fieldErrors";
import { AdmissionDetails, admissionOf } from "../Slices/AdmissionDetails";
import { AdmissionOverride } from "../Slices/AdmissionOverride";

type ImportReport = Schemas["ImportReport"];

function upload(file: File, onProgress: (pct: number) => void, overrideReason?: string): Promise<ImportReport> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/v1/subscribers/import");
    const token = accessToken();
    if (token) xhr.setRequestHeader("Authorization", `Bearer ${token}`);
    if (overrideReason !== undefined) xhr.setRequestHeader("Admission-Override", overrideReason);
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress((100 * e.loaded) / e.total);
    xhr.onload = () => {
      let body: unknown = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        /* non-JSON error page */
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body as ImportReport);
      else reject(problemFrom(xhr.status, body));
    };
    xhr.onerror = () => reject(new ApiProblem(0, "Upload failed", "the server could not be reached"));
    const form = new FormData();
    form.append("file", file);
    xhr.send(form);
  });
}

export function ImportCsv() {
  const qc = useQueryClient();
  const { me } = useSession();
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<number | null>(null);
  const [report, setReport] = useState<ImportReport | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);

  async function run(overrideReason?: string) {
    if (!file) return;
    setReport(null);
    setProblem(null);
    setProgress(0);
    try {
      const r = await upload(file, setProgress, overrideReason);
      setProgress(100);
      setReport(r);
      await qc.invalidateQueries({ queryKey: ["subscribers"] });
    } catch (e) {
      setProblem(e instanceof ApiProblem ? e : new ApiProblem(0, String(e)));
      setProgress(null);
    }
  }

  return (
    <Stack>
      <Text size="sm" c="dimmed">
        Columns: <code>imsi,ue_ip,teids,tenant,slices</code> and optionally <code>guaranteed_bps</code> (bit/s) — teids
        and slices separated by “;”. All rows or none are imported.
      </Text>
      <Group align="end">
        <FileInput
          label="Subscribers CSV"
          accept=".csv,text/csv"
          value={file}
          onChange={setFile}
          w={300}
          maw="100%"
          clearable
          clearButtonProps={{ "aria-label": "Clear the chosen file" }}
        />
        <Button
          onClick={() => void run()}
          disabled={!file}
          loading={progress !== null && progress < 100 && !report && !problem}>
          Import
        </Button>
      </Group>
      {progress !== null && (
        <Progress value={progress} aria-label="Upload progress" striped animated={progress < 100} />
      )}
      {report && (
        <Alert color="green" title="Imported" role="status">
          {report.imported.toLocaleString("en")} of {report.rows.toLocaleString("en")} rows in{" "}
          {report.duration_s.toFixed(2)} s
        </Alert>
      )}
      {problem && admissionOf(problem) && (
        <>
          <Alert color="red" title={problem.title} role="alert">
            <Text size="sm">Nothing was imported: {problem.detail}</Text>
          </Alert>
          <AdmissionDetails problem={problem} />
          <AdmissionOverride
            problem={problem}
            canOverride={me?.role === "operator"}
            pending={progress !== null && progress < 100}
            onOverride={(reason) => void run(reason)}
          />
        </>
      )}
      {problem && !admissionOf(problem) && (
        <Alert color="red" title={problem.title} role="alert">
          <Text size="sm">
            {problem.errors.length
              ? `${problem.errors.length} ${problem.errors.length === 1 ? "error" : "errors"} in the file; nothing was imported. Line 1 is the header.`
              : problemSummary(problem)}
          </Text>
          {problem.errors.length > 0 && (
            <Table.ScrollContainer minWidth={320} mt="xs">
              <Table aria-label="Import errors">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Line</Table.Th>
                    <Table.Th>Column</Table.Th>
                    <Table.Th>Error</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {problem.errors
                    .slice(0, 200)
                    .map((e) => csvRowError(e))
                    .map((e, i) => (
                      <Table.Tr key={i}>
                        <Table.Td>{e.line ?? "—"}</Table.Td>
                        <Table.Td>{e.column}</Table.Td>
                        <Table.Td>{e.message}</Table.Td>
                      </Table.Tr>
                    ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
          )}
          {problem.errors.length > 200 && <Text size="sm">The first 200 are shown.</Text>}
        </Alert>
      )}
    </Stack>
  );
}
