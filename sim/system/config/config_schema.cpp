#include "sim/system/config/config_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/network/network.h"
#include "sim/kernel/build_info.h"

namespace gpunvme {

namespace {

using Json = nlohmann::ordered_json;

// A bound as an integer where it is one (an Integer field's 0 reads better
// than 0.0), or null where JSON cannot hold it (an infinite bound: none).
Json bound(double value, bool integral) {
  if (!std::isfinite(value)) return nullptr;
  if (integral && std::floor(value) == value && std::fabs(value) < 9.0e18) {
    return static_cast<std::int64_t>(value);
  }
  return value;
}

void add_bounds(Json& schema, const ParamSpec& p, bool integral) {
  if (p.min) {
    Json b = bound(*p.min, integral);
    if (!b.is_null()) schema["minimum"] = b;
  }
  if (p.max) {
    Json b = bound(*p.max, integral);
    if (!b.is_null()) schema["maximum"] = b;
  }
}

std::string description(const ParamSpec& p) {
  std::string text = described_doc(p);
  if (!p.unit.empty()) text += fmt::format(" [unit: {}]", p.unit);
  return text;
}

Json param_schema(const ParamSpec& p) {
  Json schema;
  schema["description"] = description(p);
  switch (p.type) {
    case ParamType::Integer:
      schema["type"] = "integer";
      if (!p.allowed.empty()) {
        schema["enum"] = p.allowed;
      } else {
        add_bounds(schema, p, true);
      }
      break;
    case ParamType::Real:
      schema["type"] = "number";
      add_bounds(schema, p, false);
      break;
    case ParamType::Boolean: schema["type"] = "boolean"; break;
    case ParamType::String: schema["type"] = "string"; break;
    case ParamType::Enum:
      schema["type"] = "string";
      schema["enum"] = p.choices;
      break;
    case ParamType::StringList:
      // The loader refuses an entry named twice.
      schema["type"] = "array";
      schema["items"] = {{"type", "string"}};
      schema["uniqueItems"] = true;
      break;
    case ParamType::RealList:
    case ParamType::IntegerList: {
      const bool integers = p.type == ParamType::IntegerList;
      Json item = {{"type", integers ? "integer" : "number"}};
      add_bounds(item, p, integers);
      schema["type"] = "array";
      schema["items"] = std::move(item);
      break;
    }
  }
  if (!p.default_value.is_null()) schema["default"] = Json::parse(p.default_value.dump());
  return schema;
}

// The object a component's fields make, with the structural keys the loader
// reads before the parameters; closed, as the loader refuses any other key.
// A field without a default is required, except in a node, whose profile
// may give it.
Json component_schema(const ComponentSpec& spec, Json structural, bool profiled) {
  Json schema;
  schema["type"] = "object";
  schema["description"] = spec.doc;
  Json properties = std::move(structural);
  Json required = Json::array();
  for (const ParamSpec& p : spec.params) {
    properties[p.name] = param_schema(p);
    if (p.default_value.is_null() && !profiled) required.push_back(p.name);
  }
  schema["properties"] = std::move(properties);
  if (!required.empty()) schema["required"] = std::move(required);
  schema["additionalProperties"] = false;
  return schema;
}

Json non_empty_string(const std::string& doc) {
  return {{"type", "string"}, {"minLength", 1}, {"description", doc}};
}

// A node of any kind: id and kind, then the fields of that kind's component.
Json node_schema(const Catalog& catalog) {
  std::vector<std::string> kinds;
  for (const ComponentSpec& spec : catalog.node_kinds) kinds.push_back(spec.kind);
  Json node;
  node["type"] = "object";
  node["description"] = "A node of the topology; its kind decides its fields.";
  node["required"] = {"id", "kind"};
  node["properties"] = {{"kind", {{"enum", kinds}, {"description", "component kind"}}}};
  Json cases = Json::array();
  for (const std::string& kind : kinds) {
    cases.push_back(
        {{"if", {{"properties", {{"kind", {{"const", kind}}}}}, {"required", {"kind"}}}},
         {"then", {{"$ref", "#/$defs/" + kind}}}});
  }
  node["allOf"] = std::move(cases);
  return node;
}

Json node_structural(const std::string& kind) {
  return {{"id", non_empty_string("unique node id, named by links and other fields")},
          {"kind", {{"const", kind}}},
          {"profile", non_empty_string("device profile: configs/<gpu|ssd>/NAME.json beside the "
                                       "topology file, else the shipped one; the node's own "
                                       "fields override it")},
          {"doc", {{"type", "string"}, {"description", "free text for people"}}},
          {"host", non_empty_string("the machine this node belongs to in a topology of several "
                                    "hosts joined by network_links")}};
}

Json topology_schema(const Catalog& catalog) {
  Json structural = {
      {"nodes",
       {{"type", "array"},
        {"minItems", 1},
        {"items", {{"$ref", "#/$defs/node"}}},
        {"description", "the nodes: CPUs, memories, root complexes, switches, GPUs, SSDs"}}},
      {"links",
       {{"type", "array"},
        {"items", {{"$ref", "#/$defs/link"}}},
        {"description", "PCIe links of the tree, and inter-socket links"}}},
      {"network_links",
       {{"type", "array"},
        {"items", {{"$ref", "#/$defs/network_link"}}},
        {"description", "network cables between rdma_nic, dpu and network_switch nodes"}}}};
  Json schema = component_schema(catalog.topology, std::move(structural), false);
  schema["required"].push_back("nodes");
  return schema;
}

// A scenario's fields; one that belongs to other kinds only is refused, as
// the loader refuses it. With no "kind" the field's default kind applies.
Json scenario_schema(const Catalog& catalog) {
  const ComponentSpec& spec = catalog.scenario;
  Json schema = component_schema(spec, Json::object(), false);
  const ParamSpec* kind = spec.find("kind");
  if (kind == nullptr) return schema;
  Json cases = Json::array();
  for (const std::string& k : kind->choices) {
    Json refused = Json::object();
    for (const ParamSpec& p : spec.params) {
      if (!p.kinds.empty() && std::find(p.kinds.begin(), p.kinds.end(), k) == p.kinds.end()) {
        std::string kinds;
        for (const std::string& own : p.kinds) kinds += (kinds.empty() ? "" : ", ") + own;
        // {"not": {}} refuses any value, as false does, and carries the reason.
        refused[p.name] = {{"not", Json::object()},
                           {"description", fmt::format("applies to kind {} only", kinds)}};
      }
    }
    if (refused.empty()) continue;
    Json condition = {{"properties", {{"kind", {{"const", k}}}}}};
    if (kind->default_value != k) condition["required"] = {"kind"};
    cases.push_back({{"if", std::move(condition)}, {"then", {{"properties", std::move(refused)}}}});
  }
  if (!cases.empty()) schema["allOf"] = std::move(cases);
  return schema;
}

}  // namespace

Json config_json_schema(const Catalog& catalog, const std::string& root,
                        const ComponentSpec* tenants, const ComponentSpec* tenant) {
  Json defs = Json::object();
  defs["topology"] = topology_schema(catalog);
  defs["scenario"] = scenario_schema(catalog);
  defs["node"] = node_schema(catalog);
  defs["link"] = component_schema(catalog.link,
                                  {{"from", non_empty_string("node id at one end")},
                                   {"to", non_empty_string("node id at the other end")}},
                                  false);
  Json link_required = {"from", "to"};
  for (const Json& name : defs["link"].value("required", Json::array())) {
    link_required.push_back(name);
  }
  defs["link"]["required"] = std::move(link_required);
  defs["network_link"] = component_schema(network::network_link_spec(),
                                          {{"from", non_empty_string("node id at one end")},
                                           {"to", non_empty_string("node id at the other end")}},
                                          false);
  defs["network_link"]["required"] = Json{"from", "to"};
  for (const ComponentSpec& spec : catalog.node_kinds) {
    defs[spec.kind] = component_schema(spec, node_structural(spec.kind), true);
  }
  // A scenario file with "tenants" holds several workloads, each a scenario.
  std::string scenario_file = "scenario";
  if (tenants != nullptr && tenant != nullptr) {
    defs["tenant"] = component_schema(
        *tenant,
        {{"scenario", {{"$ref", "#/$defs/scenario"}, {"description", "the tenant's workload"}}}},
        false);
    defs["tenant"]["required"] = {"name", "scenario"};
    defs["tenants"] = component_schema(*tenants,
                                       {{"tenants",
                                         {{"type", "array"},
                                          {"minItems", 1},
                                          {"items", {{"$ref", "#/$defs/tenant"}}},
                                          {"description", "the tenants, each with its workload"}}}},
                                       false);
    defs["tenants"]["required"] = {"tenants"};
    defs["scenario_file"] = {
        {"description", "A scenario, or with \"tenants\" several tenants' scenarios."},
        {"if", {{"type", "object"}, {"required", {"tenants"}}}},
        {"then", {{"$ref", "#/$defs/tenants"}}},
        {"else", {{"$ref", "#/$defs/scenario"}}}};
    scenario_file = "scenario_file";
  }
  Json schema;
  schema["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  const std::string version = build_version();
  if (root == "topology" || root == "scenario") {
    schema["title"] = fmt::format("gpunvme {} file (gpunvme {})", root, version);
    schema["$ref"] = "#/$defs/" + (root == "scenario" ? scenario_file : root);
  } else if (root.empty()) {
    schema["title"] = fmt::format("gpunvme topology or scenario file (gpunvme {})", version);
    schema["description"] = "A document with \"nodes\" is a topology, any other a scenario.";
    schema["if"] = {{"type", "object"}, {"required", {"nodes"}}};
    schema["then"] = {{"$ref", "#/$defs/topology"}};
    schema["else"] = {{"$ref", "#/$defs/" + scenario_file}};
  } else {
    throw std::invalid_argument("config_json_schema: root must be topology, scenario or empty");
  }
  schema["$defs"] = std::move(defs);
  return schema;
}

}  // namespace gpunvme
