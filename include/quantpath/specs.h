// quantpath specs: physical weight layouts, one self-registering row per spec family, and how each
// loads from a checkpoint.
//
// Goals: a spec's identity is the value SpecKey (family + parameters); its spec_id string exists
// only at the edges (plan JSON, CLI, messages), written and read by the family's own row. A family
// row says everything the rest of the library needs about a layout — its id grammar, the tensor
// slots it stores, its bytes, its factory, its tolerance against the fp64 reference, and which
// schemes on which devices it stores (materialize's candidates) — so adding a family is one file.
// A WeightSpec allocates a layer's parameters in one canonical layout from an AllocationRequest,
// loads them from the checkpoint source layout its LoadFacts name, and converts after loading so
// that kernels see one layout per SpecKey. A double-precision dequantization, keyed by source
// layout and written apart from the specs, is the oracle of `run` and of the kernel tests.
// Non-goals: config files and dialects (importers), choosing among candidates (materialize),
// matrix products (kernels).
//
// One header per concern under quantpath/specs/; this one includes them all.
#pragma once

#include "quantpath/specs/activation.h"
#include "quantpath/specs/family_rows.h"
#include "quantpath/specs/name_hash.h"
#include "quantpath/specs/online.h"
#include "quantpath/specs/params.h"
#include "quantpath/specs/reference.h"
#include "quantpath/specs/source_layouts.h"
#include "quantpath/specs/spec_key.h"
#include "quantpath/specs/weight_spec.h"
