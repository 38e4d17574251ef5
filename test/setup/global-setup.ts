export default async function setup(): Promise<() => Promise<void>> {
  return async () => {};
}
