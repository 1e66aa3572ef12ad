# Dialectic: slim, non-root; migrations run on start (`dialectic serve` and `dialectic worker`).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY engine ./engine
COPY storage ./storage
COPY bot ./bot
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 dialectic
COPY --from=build /install /usr/local
USER dialectic
WORKDIR /home/dialectic
ENV DIALECTIC_HOST=0.0.0.0 \
    DIALECTIC_PORT=3000 \
    DATABASE_URL=sqlite+aiosqlite:////home/dialectic/data/dialectic.db \
    PYTHONUNBUFFERED=1
RUN mkdir -p /home/dialectic/data
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:3000/healthz').status == 200 else 1)"
ENTRYPOINT ["dialectic"]
CMD ["serve"]
