# The pg-extract worker image: `docker compose up` runs it beside PostgreSQL and Temporal.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
# Test, bench and demo tooling: tsconfig.json compiles them with the source, and none is copied into the image below.
COPY test ./test
COPY scripts ./scripts
COPY bench ./bench
COPY devenv ./devenv
RUN npm run build && npm prune --omit=dev
# The workflow bundle, made once here: a worker without one bundles at every start (src/worker/workflow-bundle.ts).
RUN node dist/src/cli/main.js bundle-workflows --out dist/workflow-bundle.js

FROM node:20-bookworm-slim
WORKDIR /app
# The worker's memory settings (src/worker/runtime.ts): a lower peak RSS at the same speed.
ENV NODE_ENV=production PG_EXTRACT_OUT_DIR=/extracts NODE_OPTIONS=--max-semi-space-size=4 MALLOC_MMAP_THRESHOLD_=131072 MALLOC_ARENA_MAX=2
ENV PG_EXTRACT_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/workflow-bundle.js ./dist/
RUN mkdir -p /extracts && chown node:node /extracts
USER node
# `docker run --init` (compose: `init: true`) puts an init in front: Node as PID 1 would ignore a signal it has no handler for.
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["worker"]
