# One image for every mailroom service; the command picks the service (see docker-compose.yml).
FROM node:24-slim
WORKDIR /app
ENV NODE_ENV=production CHECKPOINT_DISABLE=1
COPY package.json package-lock.json ./
COPY packages ./packages
COPY services ./services
COPY tools ./tools
COPY prisma ./prisma
COPY scripts ./scripts
COPY tsconfig.base.json tsconfig.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
USER node
CMD ["node", "--import", "tsx", "scripts/start-all.ts"]
