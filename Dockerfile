# syntax=docker/dockerfile:1
# Build: compile TypeScript with the full dependency tree.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY streams ./streams
RUN npm run build && npm prune --omit=dev

# Run: Node 24 slim plus Debian's haproxy, which validation runs as `haproxy -c`.
FROM node:24-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends haproxy \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# Validation writes into TMPDIR, so the root filesystem can be read-only.
ENV NODE_ENV=production TMPDIR=/tmp
USER node
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["run"]
