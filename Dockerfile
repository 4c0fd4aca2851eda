# Backend image: the API serving the built frontend. Data planes run where their hardware is.
FROM node:20-bookworm-slim AS frontend
WORKDIR /src/frontend
COPY frontend/ ./
RUN if [ -f package.json ]; then npm ci && npm run build; else mkdir -p dist; fi

FROM python:3.11-slim-bookworm
RUN pip install --no-cache-dir uv
WORKDIR /app
COPY pyproject.toml uv.lock ./
COPY backend/ backend/
COPY drivers/ drivers/
RUN uv sync --locked --all-packages --no-dev
COPY --from=frontend /src/frontend/dist frontend/dist
ENV PATH="/app/.venv/bin:$PATH" HOST=0.0.0.0 PORT=8000
EXPOSE 8000
CMD ["sh", "-c", "sliceportal db migrate && uvicorn sliceportal.asgi:app --host $HOST --port $PORT"]
