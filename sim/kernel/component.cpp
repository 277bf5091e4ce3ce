#include "sim/kernel/component.h"

namespace gpunvme {

Component::Component(const sc_core::sc_module_name& name, ParamValues params)
    : sc_core::sc_module(name), params_(std::move(params)), calendar_(Calendar::current()) {}

}  // namespace gpunvme
