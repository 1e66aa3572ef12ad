# Dialectic: slim, non-root; migrations run on start (`dialectic serve` and `dialectic worker`).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY engine ./engine
COPY storage ./storage
COPY bot ./bot
# Optional extras, e.g. `docker build --build-arg EXTRAS=otel .` for OpenTelemetry traces
# (README "Tracing"); none by default
ARG EXTRAS=""
RUN pip install --no-cache-dir --prefix=/install ".${EXTRAS:+[$EXTRAS]}"

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 dialectic
COPY --from=build /install /usr/local
USER dialectic
WORKDIR /home/dialectic
# The SQLite database (dialectic.db in DIALECTIC_DATA_DIR) lives in the data volume, so it outlives the container; compose.yml points
# DATABASE_URL at PostgreSQL instead. Change the port with DIALECTIC_PORT (the health check
# follows it) and publish that port.
ENV DIALECTIC_HOST=0.0.0.0 \
    DIALECTIC_PORT=3000 \
    DIALECTIC_DATA_DIR=/home/dialectic/data \
    PYTHONUNBUFFERED=1
RUN mkdir -p /home/dialectic/data
VOLUME ["/home/dialectic/data"]
EXPOSE 3000
# GET /healthz on the port and address the server listens on (loopback when it listens on all).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
    CMD ["python", "-c", "import os, sys, urllib.request; host = os.environ.get('DIALECTIC_HOST', '127.0.0.1'); host = '127.0.0.1' if host in ('', '0.0.0.0', '::') else host; host = f'[{host}]' if ':' in host else host; port = os.environ.get('DIALECTIC_PORT', '3000'); sys.exit(0 if urllib.request.urlopen(f'http://{host}:{port}/healthz', timeout=4).status == 200 else 1)"]
ENTRYPOINT ["dialectic"]
CMD ["serve"]
