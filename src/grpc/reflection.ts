/**
 * gRPC server reflection, v1 and v1alpha, so grpcurl, buf curl and Postman
 * list and call every service without the proto files. Answers from the
 * compiled-in descriptors of the services nodegate serves.
 */
import { create, createRegistry, type DescFile, type DescMessage, type DescService, type Registry, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { file_google_rpc_status } from "../../gen/google/rpc/status_pb.js";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { file_nodegate_jsonrpc_v1_error } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";

const NOT_FOUND = 5;
const INVALID_ARGUMENT = 3;

/**
 * Files no service imports but every error status carries: the details
 * (JsonRpcError, RevertError, google.rpc.RetryInfo) and google.rpc.Status,
 * so a reflection-only client can decode grpc-status-details-bin.
 */
const DETAIL_FILES: readonly DescFile[] = [file_nodegate_jsonrpc_v1_error, file_google_rpc_status, file_google_rpc_error_details];

/** The files of the services, the error details, and everything they import. */
function filesOf(services: readonly DescService[]): Map<string, DescFile> {
  const files = new Map<string, DescFile>();
  const visit = (file: DescFile) => {
    // proto.name is the import path with ".proto", as clients ask for it; DescFile.name drops the suffix.
    if (files.has(file.proto.name)) return;
    files.set(file.proto.name, file);
    for (const dep of file.dependencies) visit(dep);
  };
  for (const s of services) visit(s.file);
  for (const file of DETAIL_FILES) visit(file);
  return files;
}

/** A file and its transitive dependencies, each serialized once. */
function withDependencies(file: DescFile): Uint8Array[] {
  const seen = new Set<string>();
  const out: Uint8Array[] = [];
  const visit = (f: DescFile) => {
    if (seen.has(f.proto.name)) return;
    seen.add(f.proto.name);
    out.push(toBinary(FileDescriptorProtoSchema, f.proto));
    for (const dep of f.dependencies) visit(dep);
  };
  visit(file);
  return out;
}

function fileOfSymbol(registry: Registry, services: readonly DescService[], symbol: string): DescFile | undefined {
  const direct = registry.get(symbol);
  if (direct !== undefined) return direct.file;
  // A method ("pkg.Service.Method") or a field/value: look up its parent.
  const parent = symbol.slice(0, symbol.lastIndexOf("."));
  const service = services.find((s) => s.typeName === parent);
  if (service !== undefined) return service.file;
  const owner = registry.get(parent);
  if (owner !== undefined) return owner.file;
  // An enum value is scoped beside its enum, not inside it ("pkg.BLOCK_TAG_LATEST"), as protoc and grpc-go name it.
  for (const type of registry) {
    if (type.kind !== "enum" || type.typeName.slice(0, type.typeName.lastIndexOf(".")) !== parent) continue;
    if (type.values.some((v) => `${parent}.${v.name}` === symbol)) return type.file;
  }
  return undefined;
}

type Schemas = typeof v1 | typeof v1alpha;

function answer(schemas: Schemas, registry: Registry, files: Map<string, DescFile>, services: readonly DescService[], request: v1.ServerReflectionRequest) {
  const base = { validHost: request.host, originalRequest: request } as const;
  const error = (code: number, message: string) =>
    create(schemas.ServerReflectionResponseSchema as typeof v1.ServerReflectionResponseSchema, {
      ...base,
      messageResponse: { case: "errorResponse", value: { errorCode: code, errorMessage: message } },
    });
  const filesResponse = (file: DescFile | undefined, what: string) =>
    file === undefined
      ? error(NOT_FOUND, `${what} not found`)
      : create(schemas.ServerReflectionResponseSchema as typeof v1.ServerReflectionResponseSchema, {
          ...base,
          messageResponse: { case: "fileDescriptorResponse", value: { fileDescriptorProto: withDependencies(file) } },
        });
  const r = request.messageRequest;
  switch (r.case) {
    case "listServices":
      return create(schemas.ServerReflectionResponseSchema as typeof v1.ServerReflectionResponseSchema, {
        ...base,
        messageResponse: { case: "listServicesResponse", value: { service: services.map((s) => ({ name: s.typeName })) } },
      });
    case "fileByFilename":
      return filesResponse(files.get(r.value), `file ${r.value}`);
    case "fileContainingSymbol":
      return filesResponse(fileOfSymbol(registry, services, r.value), `symbol ${r.value}`);
    case "fileContainingExtension": {
      const message = registry.getMessage(r.value.containingType);
      const ext = message ? registry.getExtensionFor(message, r.value.extensionNumber) : undefined;
      return filesResponse(ext?.file, `extension ${r.value.extensionNumber} of ${r.value.containingType}`);
    }
    case "allExtensionNumbersOfType": {
      const message = registry.getMessage(r.value);
      if (message === undefined) return error(NOT_FOUND, `type ${r.value} not found`);
      const numbers: number[] = [];
      for (const file of files.values()) {
        for (const ext of file.extensions) if ((ext.extendee as DescMessage).typeName === r.value) numbers.push(ext.number);
      }
      return create(schemas.ServerReflectionResponseSchema as typeof v1.ServerReflectionResponseSchema, {
        ...base,
        messageResponse: { case: "allExtensionNumbersResponse", value: { baseTypeName: r.value, extensionNumber: numbers } },
      });
    }
    default:
      return error(INVALID_ARGUMENT, "empty reflection request");
  }
}

/** Registers both reflection services; `services` are all the services the server offers (reflection included). */
export function registerReflection(router: ConnectRouter, served: readonly DescService[]): void {
  const services = [...served, v1.ServerReflection, v1alpha.ServerReflection];
  const files = filesOf(services);
  const registry = createRegistry(...files.values());
  for (const schemas of [v1, v1alpha] as const) {
    router.service(schemas.ServerReflection as typeof v1.ServerReflection, {
      async *serverReflectionInfo(requests) {
        for await (const request of requests) {
          yield answer(schemas, registry, files, services, request as v1.ServerReflectionRequest);
        }
      },
    });
  }
}
