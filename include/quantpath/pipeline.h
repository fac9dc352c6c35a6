// quantpath pipeline: the one way from a model folder to decisions and loaded layers.
//
// Goals: OpenModel (sources → importer with the dialect's HF→engine name mapper → sites),
// DecideAll (a decision per site, with its physical spec, stored bytes and whether this build has
// a kernel for it), DecideLayer (one layer as a user names it, with its trace), LoadLayer
// (materialize → load → Linear), LoadExperts (the same for every expert of an MoE layer),
// LoadModel, CheckFolder, DiffDialects and MatchCases, and the double-precision reference they are
// measured against. Every command, the Python module and embedders go through it, so they cannot
// disagree. Non-goals: formatting output (reports), argument parsing (the CLI).
//
// One header per concern under quantpath/pipeline/; this one includes them all.
#pragma once

#include "quantpath/pipeline/check.h"
#include "quantpath/pipeline/decide.h"
#include "quantpath/pipeline/diff.h"
#include "quantpath/pipeline/engine_cases.h"
#include "quantpath/pipeline/load_experts.h"
#include "quantpath/pipeline/load_layer.h"
#include "quantpath/pipeline/load_model.h"
#include "quantpath/pipeline/open_model.h"
