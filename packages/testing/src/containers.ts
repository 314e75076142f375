// Fallback only: used when no local Postgres / Redis answers. Loaded lazily so that machines with
// local servers never touch Docker.
import { GenericContainer, type StartedTestContainer, Wait } from "testcontainers";

const started: StartedTestContainer[] = [];

export async function PostgreSqlContainer(): Promise<string> {
  const c = await new GenericContainer("postgres:16-alpine")
    .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: "trust" })
    .withExposedPorts(5432)
    .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
    .start();
  started.push(c);
  return `postgresql://postgres@${c.getHost()}:${c.getMappedPort(5432)}/postgres`;
}

export async function RedisContainer(): Promise<string> {
  const c = await new GenericContainer("redis:7-alpine")
    .withCommand(["redis-server", "--maxmemory-policy", "noeviction", "--appendonly", "yes"])
    .withExposedPorts(6379)
    .start();
  started.push(c);
  return `redis://${c.getHost()}:${c.getMappedPort(6379)}`;
}
