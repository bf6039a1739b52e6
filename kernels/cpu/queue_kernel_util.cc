#include "kernels/cpu/queue_kernel_util.h"

#include <utility>

#include "kernels/resource.h"

namespace actorflow {
namespace {

StatusOr<Shape> ParseShape(const std::string& text) {
  if (text == "<unknown>") return Shape::UnknownRank();
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') {
    return InvalidArgument("'" + text + "' is not a shape");
  }
  std::vector<int64_t> dims;
  const std::string body = text.substr(1, text.size() - 2);
  size_t start = 0;
  while (!body.empty()) {
    const size_t comma = body.find(',', start);
    const std::string dim = body.substr(start, comma == std::string::npos ? std::string::npos
                                                                         : comma - start);
    if (dim == "?" || dim == "-1") {
      dims.push_back(Shape::kUnknownDim);
    } else if (!dim.empty() && dim.size() <= 18 &&
               dim.find_first_not_of("0123456789") == std::string::npos) {
      dims.push_back(std::stoll(dim));
    } else {
      return InvalidArgument("'" + text + "' is not a shape");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Shape(std::move(dims));
}

}  // namespace

QueueRef QueueRefOf(const Node& node) {
  return QueueRef{node.attr<std::string>("container"), node.attr<std::string>("shared_name"),
                  std::string()};
}

QueueRef InSession(QueueRef queue, const KernelContext& ctx) {
  queue.session_container = SessionContainer(ctx.session_scope());
  return queue;
}

QueueSpec SpecInSession(QueueSpec spec, bool is_private, const KernelContext& ctx) {
  if (is_private && ctx.session_scope() != 0) {
    spec.name = QueueRef::PrivateQueueName(spec.container, spec.name);
    spec.container = SessionContainer(ctx.session_scope());
  }
  return spec;
}

std::function<void(const Status&)> DoneWithStatus(KernelContext* ctx, std::function<void()> done) {
  return [ctx, done = std::move(done)](const Status& s) {
    if (!s.ok()) ctx->SetStatus(s.WithContext(ctx->node().Describe()));
    done();
  };
}

Status ParseComponentAttrs(const Node& node, const std::string& types_attr,
                           std::vector<DType>* dtypes, std::vector<Shape>* shapes) {
  for (const std::string& name : node.attr<std::vector<std::string>>(types_attr)) {
    AF_ASSIGN_OR_RETURN(DType dtype, DTypeFromName(name));
    dtypes->push_back(dtype);
  }
  auto it = node.attrs().find("shapes");
  if (shapes == nullptr || it == node.attrs().end()) return Status::OK();
  for (const std::string& text : it->second.Get<std::vector<std::string>>()) {
    AF_ASSIGN_OR_RETURN(Shape shape, ParseShape(text));
    shapes->push_back(std::move(shape));
  }
  return Status::OK();
}

Status NoQueueService(const Node& node) {
  return FailedPrecondition(node.Describe() +
                            ": queues live in the actor runtime; this session (DirectSession) "
                            "has none. Open the session with NewSession (target \"\" or "
                            "actorflow://host:port)");
}

void FailAndDone(KernelContext* ctx, const Status& status, const std::function<void()>& done) {
  ctx->SetStatus(status.message().rfind(ctx->node().Describe(), 0) == 0
                     ? status
                     : status.WithContext(ctx->node().Describe()));
  done();
}

void SetComponentOutputs(KernelContext* ctx, std::vector<Tensor> components) {
  const Node& n = ctx->node();
  if (static_cast<int>(components.size()) != n.num_outputs()) {
    ctx->Fail(Code::kInternal, "the queue gave " + std::to_string(components.size()) +
                                   " components for " + std::to_string(n.num_outputs()) +
                                   " outputs");
    return;
  }
  for (int i = 0; i < n.num_outputs(); ++i) {
    const Tensor& t = components[i];
    if (t.dtype() != n.output_dtype(i) || !n.output_shape(i).IsCompatibleWith(t.shape())) {
      ctx->Fail(Code::kInvalidArgument,
                "component " + std::to_string(i) + " from the queue is " + t.DebugString() +
                    " but the node declares " + DTypeName(n.output_dtype(i)) + " " +
                    n.output_shape(i).ToString() + ": build it with the queue's component "
                    "types and shapes");
      return;
    }
  }
  for (int i = 0; i < n.num_outputs(); ++i) ctx->set_output(i, std::move(components[i]));
}

}  // namespace actorflow
