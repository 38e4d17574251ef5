/** Loads nodegate's configuration: defaults, then the YAML file (if any), then the environment. */
import { readFileSync } from "node:fs";
import { type Config, ConfigError, defaults } from "./config.js";
import { applyEnv } from "./env.js";
import { applyConfigFile } from "./yaml-file.js";
import { servedMethodNames } from "../methods/method-names.js";

/** The text of the configuration file at `configPath`. */
export function readConfigText(configPath: string): string {
  try {
    return readFileSync(configPath, "utf8");
  } catch (err) {
    throw new ConfigError(`${configPath}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** `text`: the file's text as already read (a worker gets what its primary read), else it is read from `configPath`. */
export function loadConfig(env: NodeJS.ProcessEnv, configPath: string | undefined = env.NODEGATE_CONFIG, text?: string): Config {
  const config = defaults();
  if (configPath) applyConfigFile(config, text ?? readConfigText(configPath), configPath, env, servedMethodNames());
  applyEnv(config, env);
  const primary = config.networks.find((n) => n.name === config.defaultNetwork);
  config.embeddedAnvil = primary !== undefined && primary.upstreams.length === 0;
  for (const n of config.networks) {
    if (n.upstreams.length === 0 && !(config.embeddedAnvil && n.name === config.defaultNetwork)) {
      const where = n.definedAt === undefined ? "" : `${n.definedAt}: `;
      throw new ConfigError(`${where}network ${n.name}: no upstream configured (networks[].upstreams; only the default network may run on the embedded Anvil)`);
    }
    if (config.embeddedAnvil && n.name === config.defaultNetwork && n.family !== "eth") {
      throw new ConfigError(`${n.definedAt === undefined ? "" : `${n.definedAt}: `}network ${n.name}: the embedded Anvil serves only an ethereum network; configure an upstream`);
    }
  }
  return config;
}
