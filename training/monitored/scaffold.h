// Scaffold: TensorFlow 1.x's tf.train.Scaffold, the pieces a MonitoredTrainingSession
// needs besides the user's model: how to initialize the global variables (init_op)
// and the local ones (local_init_op), how to tell whether the model is ready (every
// global variable initialized, checked where it lives), and a Saver over the global
// variables to restore a checkpoint with.
//
//   Scaffold scaffold;                        // every piece by default
//   scaffold.set_init_op("my_init");          // or the caller's own
//   AF_RETURN_IF_ERROR(scaffold.Finalize(graph));  // builds the missing pieces
//   AF_ASSIGN_OR_RETURN(auto missing, scaffold.UninitializedVariables(session, {}));
//
// Finalize builds, with names made unique in the graph ("scaffold/...", "save/..."):
//   init_op        GlobalVariablesInitializer ("scaffold/init"), over every
//                  initializer in kInitializersCollection at that time
//   local_init_op  LocalVariablesInitializer ("scaffold/local_init")
//   ready check    per ready variable (default: kVariablesCollection), an
//                  IsVariableInitialized ("scaffold/<var>/is_initialized") and a
//                  VariableShape ("scaffold/<var>/shape"), both beside the variable
//                  (graph/ops.h: a bool and a few int64s cross the network, no value)
//   saver          Saver::Create over the global variables (none without variables)
// A second Finalize on the same graph reuses the scaffold nodes that still fit.
//
// Thread safety: configure and Finalize from one thread (Finalize adds nodes to the
// graph, like any builder). After Finalize the const methods may be called from
// several threads (each is one Session::Run). Copies share the Saver.
#ifndef ACTORFLOW_TRAINING_MONITORED_SCAFFOLD_H_
#define ACTORFLOW_TRAINING_MONITORED_SCAFFOLD_H_

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "kernels/session.h"
#include "training/checkpoint/checkpoint.h"

namespace actorflow {

class Scaffold {
 public:
  Scaffold() = default;

  // Overrides, before Finalize (an empty name or a null saver: the default).
  // A node run as a target to initialize every global variable.
  void set_init_op(std::string node_name) {
    init_op_ = std::move(node_name);
    default_init_op_ = false;
  }
  // A node run as a target to initialize the local variables.
  void set_local_init_op(std::string node_name) {
    local_init_op_ = std::move(node_name);
    default_local_init_op_ = false;
  }
  // The Variable nodes whose initialization makes the model ready.
  void set_ready_variables(std::vector<std::string> names) {
    ready_variables_ = std::move(names);
    ready_variables_given_ = true;
  }
  void set_saver(std::shared_ptr<Saver> saver) { saver_ = std::move(saver); }

  // Builds the missing pieces in `graph` (see the top of this file) and checks the
  // given ones: NotFound for an init op, local init op or ready variable that is no
  // node of the graph; InvalidArgument for a ready "variable" that is not a Variable;
  // the builders' and Saver::Create's errors. FailedPrecondition when called again
  // with another graph.
  Status Finalize(Graph* graph);
  bool finalized() const { return graph_ != nullptr; }

  // After Finalize.
  const std::string& init_op() const { return init_op_; }
  // True when Finalize built (or reused) the default init op: it is made only of the
  // initializers collection's Assigns, so a part of them may run instead of all.
  bool default_init_op() const { return default_init_op_; }
  const std::string& local_init_op() const { return local_init_op_; }
  const std::vector<std::string>& ready_variables() const { return ready_variables_; }
  // Null when the graph has no global variable to save.
  const std::shared_ptr<Saver>& saver() const { return saver_; }

  // The ready check: one Run fetching whether each ready variable is initialized on
  // its device. Returns the names of those that are not (empty: the model is ready).
  // Errors: the session's. FailedPrecondition before Finalize.
  StatusOr<std::vector<std::string>> UninitializedVariables(Session* session,
                                                            const RunOptions& options) const;

  // One Run fetching the shape of each ready variable's live value, where it lives:
  // FailedPrecondition naming every variable whose live value has another shape than
  // this graph declares (this task's graph differs from the one that initialized the
  // variables: the chief's, or an earlier incarnation's on still-running ps tasks),
  // InvalidArgument for another dtype (the runtime's message, naming the variable).
  // Precondition: the model is ready (an uninitialized variable fails the Run).
  Status CheckLiveVariablesMatchGraph(Session* session, const RunOptions& options) const;

  // The initializers (kInitializersCollection) of the given variables, for
  // initializing only those of a partly initialized model. NotFound naming a
  // variable that has none.
  StatusOr<std::vector<std::string>> InitializersOf(
      const std::vector<std::string>& variables) const;

 private:
  struct ReadyProbe {
    std::string variable;
    std::string is_initialized;  // IsVariableInitialized output
    std::string shape;           // VariableShape output
  };
  Status BuildReadyProbes(Graph* graph);

  std::string init_op_;
  bool default_init_op_ = false;
  std::string local_init_op_;
  bool default_local_init_op_ = false;
  std::vector<std::string> ready_variables_;
  bool ready_variables_given_ = false;
  std::shared_ptr<Saver> saver_;
  const Graph* graph_ = nullptr;
  std::vector<ReadyProbe> probes_;
};

// "a, b, c" of at most `max_names` names, then "and N more".
std::string QuotedNames(const std::vector<std::string>& names, size_t max_names = 10);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_MONITORED_SCAFFOLD_H_
