#include "service/channel.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace specplan::service {

namespace {

absl::Status Bad(absl::string_view flag, absl::string_view servers, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(flag, " = '", servers, "': ", why));
}

bool IsIpv4(absl::string_view host) {
  std::vector<absl::string_view> parts = absl::StrSplit(host, '.');
  if (parts.size() != 4) return false;
  for (absl::string_view p : parts) {
    int v = 0;
    if (p.empty() || p.size() > 3 || !absl::SimpleAtoi(p, &v) || v < 0 || v > 255) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> PlannerTarget(absl::string_view servers, absl::string_view flag) {
  const std::string trimmed(absl::StripAsciiWhitespace(servers));
  if (trimmed.empty()) return Bad(flag, servers, "empty (give HOST:PORT, a list, or dns:///)");
  for (const char* scheme : {"dns:", "ipv4:", "ipv6:", "unix:", "unix-abstract:"}) {
    if (absl::StartsWith(trimmed, scheme)) return trimmed;
  }
  if (!absl::StrContains(trimmed, ',')) return trimmed;  // one HOST:PORT, resolved by gRPC
  std::vector<std::string> v4, v6;
  for (absl::string_view raw : absl::StrSplit(trimmed, ',')) {
    const absl::string_view a = absl::StripAsciiWhitespace(raw);
    if (a.empty()) return Bad(flag, servers, "an empty address in the list");
    const size_t colon = a.rfind(':');
    int port = 0;
    if (colon == absl::string_view::npos || !absl::SimpleAtoi(a.substr(colon + 1), &port) ||
        port <= 0 || port > 65535) {
      return Bad(flag, servers, absl::StrCat("'", a, "' needs a port in [1, 65535] (HOST:PORT)"));
    }
    const absl::string_view host = a.substr(0, colon);
    if (host == "localhost" || IsIpv4(host)) {
      v4.push_back(absl::StrCat(host == "localhost" ? "127.0.0.1" : host, ":", port));
    } else if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      v6.push_back(std::string(a));
    } else {
      return Bad(flag, servers,
                 absl::StrCat("'", host,
                              "' is a host name; a list takes IP addresses (gRPC resolves one "
                              "name per target): use dns:///NAME:PORT for a name that resolves "
                              "to every replica"));
    }
  }
  if (!v4.empty() && !v6.empty()) {
    return Bad(flag, servers, "mixes IPv4 and IPv6 addresses (gRPC takes one family per list)");
  }
  return v4.empty() ? absl::StrCat("ipv6:", absl::StrJoin(v6, ","))
                    : absl::StrCat("ipv4:", absl::StrJoin(v4, ","));
}

const std::string& PlannerServiceConfigJson() {
  static const std::string* const kJson = [] {
    std::string names;
    for (const char* m : {"PlanTree", "PlanBatch", "MergeTrees", "EstimateLatency", "ListProfiles",
                          "GetProfile", "GetStats", "Ping", "WhatIf"}) {
      absl::StrAppend(&names, names.empty() ? "" : ",",
                      "{\"service\":\"specplan.v1.Planner\",\"method\":\"", m, "\"}");
    }
    return new std::string(
        absl::StrCat("{\"loadBalancingConfig\":[{\"round_robin\":{}}],"
                     "\"healthCheckConfig\":{\"serviceName\":\"specplan.v1.Planner\"},"
                     "\"methodConfig\":[{\"name\":[",
                     names,
                     "],\"retryPolicy\":{\"maxAttempts\":5,\"initialBackoff\":\"0.01s\","
                     "\"maxBackoff\":\"0.2s\",\"backoffMultiplier\":2,"
                     "\"retryableStatusCodes\":[\"UNAVAILABLE\"]}}]}"));
  }();
  return *kJson;
}

grpc::ChannelArguments PlannerChannelArguments() {
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(PlannerServiceConfigJson());
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return args;
}

}  // namespace specplan::service
