#include "training/estimators/classifier_setup.h"

#include <filesystem>
#include <system_error>

namespace actorflow {
namespace {

std::string DescribeSpecDifference(const DNNModelSpec& found, const DNNModelSpec& wanted) {
  if (found.model != wanted.model || found.split != wanted.split || found.parts != wanted.parts) {
    return "model " + found.model + " split " + found.split + " over " +
           std::to_string(found.parts) + " part(s) there, " + wanted.model + " split " +
           wanted.split + " over " + std::to_string(wanted.parts) + " here";
  }
  if (found.hidden_units != wanted.hidden_units) {
    return "hidden units " + HiddenUnitsString(found.hidden_units) + " there, " +
           HiddenUnitsString(wanted.hidden_units) + " here";
  }
  if (found.n_classes != wanted.n_classes) {
    return "n_classes " + std::to_string(found.n_classes) + " there, " +
           std::to_string(wanted.n_classes) + " here";
  }
  if (found.activation != wanted.activation) {
    return "activation " + found.activation + " there, " + wanted.activation + " here";
  }
  if (found.label_column != wanted.label_column) {
    return "label column '" + found.label_column + "' there, '" + wanted.label_column + "' here";
  }
  if (found.feature_columns.size() != wanted.feature_columns.size()) {
    return std::to_string(found.feature_columns.size()) + " feature columns there, " +
           std::to_string(wanted.feature_columns.size()) + " here";
  }
  for (size_t i = 0; i < found.feature_columns.size(); ++i) {
    const NumericColumn& a = found.feature_columns[i];
    const NumericColumn& b = wanted.feature_columns[i];
    if (a.name != b.name) {
      return "feature column " + std::to_string(i + 1) + " is '" + a.name + "' there, '" + b.name +
             "' here";
    }
    if (a.normalization != b.normalization) {
      return "feature column '" + a.name + "' has other normalization statistics";
    }
  }
  return "the models differ";
}

}  // namespace

DNNModelSpec ModelSpecFromOptions(const DNNClassifierOptions& options) {
  DNNModelSpec spec;
  spec.feature_columns = options.feature_columns;
  spec.hidden_units = options.hidden_units;
  spec.n_classes = options.n_classes;
  spec.activation = options.activation;
  spec.label_column = options.label_column;
  return spec;
}

Status CheckSessionOptions(const std::string& who, const DNNClassifierOptions& options) {
  if (!options.session_factory) return InvalidArgument(who + ": no session_factory given");
  if (options.timeout_in_ms < 0) {
    return InvalidArgument(who + ": timeout_in_ms " + std::to_string(options.timeout_in_ms) +
                           " must be >= 0");
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<Optimizer>> MakeOptimizerFromOptions(const DNNClassifierOptions& options) {
  std::unique_ptr<Optimizer> optimizer;
  if (options.optimizer_factory) {
    AF_ASSIGN_OR_RETURN(optimizer, options.optimizer_factory());
    if (optimizer == nullptr) return InvalidArgument("optimizer_factory returned no optimizer");
  } else {
    AF_ASSIGN_OR_RETURN(optimizer, MakeOptimizer(options.optimizer, options.learning_rate));
  }
  if (options.learning_rate_decay.enabled()) {
    AF_RETURN_IF_ERROR(optimizer->SetLearningRateDecay(options.learning_rate_decay));
  }
  return optimizer;
}

StatusOr<std::shared_ptr<const Dataset>> CallInputFn(const InputFn& input_fn,
                                                     bool labels_required) {
  if (!input_fn) return InvalidArgument("input_fn is empty");
  AF_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> dataset, input_fn());
  if (dataset == nullptr) return InvalidArgument("input_fn returned no dataset");
  AF_RETURN_IF_ERROR(dataset->status());
  const size_t components = dataset->num_components();
  if (components != 2 && (labels_required || components != 1)) {
    return InvalidArgument("input_fn's dataset has elements " +
                           ElementSpecString(dataset->output_dtypes(), dataset->output_shapes()) +
                           "; expected (features float32 [batch, F], labels int32 [batch])");
  }
  return dataset;
}

Status PrepareModelDir(const std::string& dir, const DNNModelSpec& spec) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir, ec)) {
    return Unavailable("model directory '" + dir + "' cannot be created" +
                       (ec ? ": " + ec.message() : std::string()));
  }
  StatusOr<DNNModelSpec> existing = ReadModelSpec(dir);
  if (existing.ok() && *existing != spec) {
    return FailedPrecondition("model directory '" + dir + "' holds another model (" +
                              DescribeSpecDifference(*existing, spec) + "): use another directory");
  }
  if (!existing.ok() && existing.status().code() != Code::kNotFound) return existing.status();
  // Writing model.json now also shows that the directory is writable before any
  // training step runs.
  return WriteModelSpec(dir, spec);
}

StatusOr<bool> RestoreLatestCheckpoint(const std::string& dir, Saver* saver, Session* session,
                                       int64_t* checkpoint_step) {
  StatusOr<std::string> latest = LatestCheckpoint(dir);
  if (!latest.ok()) {
    if (latest.status().code() == Code::kNotFound) return false;
    return latest.status();
  }
  AF_RETURN_IF_ERROR(saver->Restore(session, *latest));
  AF_ASSIGN_OR_RETURN(*checkpoint_step, ReadCheckpointGlobalStep(*latest));
  return true;
}

Status SaveAtEndOfTraining(const std::string& dir, const DNNModelSpec& spec, Saver* saver,
                           Session* session, int64_t global_step, int64_t* checkpoint_step) {
  if (dir.empty() || global_step == *checkpoint_step) return Status::OK();
  AF_RETURN_IF_ERROR(saver->Save(session, dir, global_step).status());
  *checkpoint_step = global_step;
  return WriteModelSpec(dir, spec);
}

Status CheckLabels(const Tensor& labels, int64_t rows, int64_t n_classes,
                   const std::string& where) {
  if (labels.dtype() != DType::kInt32 || labels.rank() != 1 || labels.dim(0) != rows) {
    return InvalidArgument(where + ": labels are " + labels.DebugString() + ", expected int32 [" +
                           std::to_string(rows) + "]");
  }
  const int32_t* y = labels.data<int32_t>();
  for (int64_t i = 0; i < rows; ++i) {
    if (y[i] < 0 || y[i] >= n_classes) {
      return InvalidArgument("label " + std::to_string(y[i]) + " (example " + std::to_string(i) +
                             " of " + where + ") is outside [0, " + std::to_string(n_classes) +
                             "): n_classes is " + std::to_string(n_classes));
    }
  }
  return Status::OK();
}

}  // namespace actorflow
