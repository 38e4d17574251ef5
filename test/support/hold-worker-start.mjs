/**
 * Preloaded (node --import) into a nodegate primary started with NODEGATE_WORKERS, so its workers load it too (cluster
 * forks with the primary's execArgv). It holds one worker before it listens, making the window between the first and
 * the last worker listening as long as a test needs:
 *   NODEGATE_TEST_HOLD_WORKER  the cluster worker id to hold (1 is the first forked)
 *   NODEGATE_TEST_HOLD_FILE    held until this file exists; then, with NODEGATE_TEST_HOLD_EXIT, exits with that code
 *                              (a worker that fails to start), else listens
 * Only this worker's net.Server.listen is changed; the primary and the other workers run unchanged.
 */
import cluster from "node:cluster";
import { existsSync } from "node:fs";
import net from "node:net";

const id = process.env.NODEGATE_TEST_HOLD_WORKER;
const file = process.env.NODEGATE_TEST_HOLD_FILE;
if (cluster.isWorker && id !== undefined && String(cluster.worker?.id) === id) {
  const listen = net.Server.prototype.listen;
  net.Server.prototype.listen = function (...args) {
    const timer = setInterval(() => {
      if (file === undefined || !existsSync(file)) return;
      clearInterval(timer);
      const exit = process.env.NODEGATE_TEST_HOLD_EXIT;
      if (exit !== undefined && exit !== "") process.exit(Number(exit));
      listen.apply(this, args);
    }, 20);
    return this;
  };
}
