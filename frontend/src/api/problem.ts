// RFC 9457 problem+json as the backend sends it, as one Error class the UI can inspect.

export interface FieldError {
  field: string;
  message: string;
  line?: number | null;
}

export class ApiProblem extends Error {
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly errors: FieldError[];
  /** RFC 9457 extension members beside the standard ones (e.g. ``admission``: the 409's computation). */
  readonly extensions: Record<string, unknown>;

  constructor(
    status: number,
    title: string,
    detail = "",
    errors: FieldError[] = [],
    extensions: Record<string, unknown> = {},
  ) {
    super(detail ? `${title}: ${detail}` : title);
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.errors = errors;
    this.extensions = extensions;
  }

  /** Messages for one form field (the backend names fields by their dotted path). */
  fieldMessage(field: string): string | undefined {
    const hits = this.errors.filter((e) => e.field === field || e.field.endsWith(`.${field}`));
    return hits.length ? hits.map((e) => e.message).join("; ") : undefined;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}

export function problemFrom(status: number, body: unknown): ApiProblem {
  if (!isRecord(body)) return new ApiProblem(status, `HTTP ${status}`, typeof body === "string" ? body : "");
  const errors: FieldError[] = Array.isArray(body.errors)
    ? body.errors.filter(isRecord).map((e) => ({
        field: String(e.field ?? ""),
        message: String(e.message ?? ""),
        line: typeof e.line === "number" ? e.line : null,
      }))
    : [];
  const standard = new Set(["type", "title", "status", "detail", "instance", "errors"]);
  const extensions = Object.fromEntries(Object.entries(body).filter(([k]) => !standard.has(k)));
  return new ApiProblem(
    status,
    typeof body.title === "string" ? body.title : `HTTP ${status}`,
    typeof body.detail === "string" ? body.detail : "",
    errors,
    extensions,
  );
}
