# Backend image: the API serving the built frontend. Data planes run where their hardware is.
# Tools are pinned (Node 22 LTS, uv) so that a rebuild gives the same image; the portal runs
# as an unprivileged user that owns only its data directory.
FROM node:22-bookworm-slim AS frontend
WORKDIR /src/frontend
COPY frontend/ ./
RUN npm ci && npm run build

FROM python:3.11-slim-bookworm
RUN pip install --no-cache-dir uv==0.13.9 \
 && useradd --system --create-home --home-dir /var/lib/sliceportal --shell /usr/sbin/nologin sliceportal
WORKDIR /app
COPY pyproject.toml uv.lock ./
COPY backend/ backend/
COPY drivers/ drivers/
COPY testbed/ testbed/
COPY proto/ proto/
# p4c's build of slicing.p4, which the p4rt driver pushes (a wheel install carries it inside)
COPY dataplane/bmv2/compiled/ dataplane/bmv2/compiled/
RUN uv sync --locked --all-packages --no-dev
COPY --from=frontend /src/frontend/dist frontend/dist
ENV PATH="/app/.venv/bin:$PATH" HOST=0.0.0.0 PORT=8000 DATA_DIR=/var/lib/sliceportal
USER sliceportal
EXPOSE 8000
CMD ["sh", "-c", "sliceportal db migrate && uvicorn sliceportal.asgi:app --host $HOST --port $PORT"]
