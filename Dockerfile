# syntax=docker/dockerfile:1
# Build: install everything, compile TypeScript, then drop the dev dependencies.
FROM node:24.11.1-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY streams ./streams
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# Run: Node 24 slim plus Debian's haproxy, which validation runs as `haproxy -c`.
FROM node:24.11.1-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends haproxy \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY templates ./templates
# Validation writes only below TMPDIR: mount an emptyDir there and the root
# filesystem can stay read-only.
ENV NODE_ENV=production TMPDIR=/tmp
# The V8 heap cap, as a share of the container's memory limit (Node.js reads the
# cgroup limit; without one, of the machine's memory), for each of the two threads.
ENV NODE_OPTIONS="--max-old-space-size-percentage=35 --max-semi-space-size=4"
# Two glibc malloc arenas instead of one per allocating thread: less memory kept.
ENV MALLOC_ARENA_MAX=2
USER node
EXPOSE 8080 9090
ENTRYPOINT ["node", "dist/src/cli/main.js", "run"]
