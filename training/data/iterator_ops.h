// Datasets in graphs: MakeOneShotIterator (TensorFlow 1.x's
// dataset.make_one_shot_iterator()) and what runs it, the IteratorGetNext op.
//
//   Scope root = Scope::NewRootScope();
//   AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({features, labels}));
//   OneShotIterator it = MakeOneShotIterator(root, rows->Batch(32));
//   std::vector<Output> next = it.GetNext();   // {float32 [?,4], int32 [?]}
//   auto loss = Mean(root, SparseSoftmaxCrossEntropyWithLogits(root, Model(next[0]),
//                                                              next[1]).loss);
//   // each session->Run that needs `next` takes the next batch; after the last one
//   // Run returns OutOfRange ("End of sequence"), and keeps returning it.
//
// How the pieces meet: MakeOneShotIterator registers the dataset in a process-wide
// registry under a fresh iterator id and records that id in each IteratorGetNext
// node's "iterator_id" attr. The kernel finds the IteratorResource of that id in the
// step's ResourceManager, creating it (an iterator from the registered dataset) on
// first use. Hence one pass per ResourceManager: each DirectSession starts from the
// beginning, and every IteratorGetNext node of one iterator id in it shares the pass.
// A graph that names an iterator id not registered in this process (e.g. loaded from
// JSON elsewhere) fails at run time with NotFound.
//
// Thread safety: the registry is internally synchronized; an IteratorResource
// serializes GetNext calls. OneShotIterator is as Scope (one building thread).
#ifndef ACTORFLOW_TRAINING_DATA_ITERATOR_OPS_H_
#define ACTORFLOW_TRAINING_DATA_ITERATOR_OPS_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/status.h"
#include "graph/types.h"
#include "kernels/resource.h"
#include "training/data/dataset.h"

namespace actorflow {

// Registers `dataset` for the life of the process and returns its new, unique
// iterator id ("one_shot_iterator_<n>").
std::string RegisterDataset(std::shared_ptr<const Dataset> dataset);
// The dataset registered under `iterator_id`; NotFound when there is none.
StatusOr<std::shared_ptr<const Dataset>> LookupDataset(const std::string& iterator_id);

// The iterator state that IteratorGetNext nodes share, held by a ResourceManager.
class IteratorResource : public Resource {
 public:
  IteratorResource(std::string iterator_id, std::unique_ptr<Iterator> iterator)
      : iterator_id_(std::move(iterator_id)), iterator_(std::move(iterator)) {}

  // As Iterator::GetNext; safe to call from several steps at once.
  Status GetNext(Element* out);
  std::string DebugString() const override { return "IteratorResource(" + iterator_id_ + ")"; }

 private:
  std::string iterator_id_;
  std::mutex mu_;
  std::unique_ptr<Iterator> iterator_;  // guarded by mu_
};

class OneShotIterator {
 public:
  OneShotIterator(Scope scope, std::shared_ptr<const Dataset> dataset, std::string iterator_id)
      : scope_(std::move(scope)),
        dataset_(std::move(dataset)),
        iterator_id_(std::move(iterator_id)) {}

  // Adds an IteratorGetNext node (named by the scope given to MakeOneShotIterator, or
  // by `scope`) and returns its outputs, one per component, with the dataset's dtypes
  // and shapes. Each call adds a node; in a step, each node takes its own element.
  // On an error (recorded in the scope) the Outputs are invalid (node == nullptr).
  std::vector<Output> GetNext() const { return GetNext(scope_); }
  std::vector<Output> GetNext(const Scope& scope) const;

  const std::string& iterator_id() const { return iterator_id_; }
  const std::shared_ptr<const Dataset>& dataset() const { return dataset_; }

 private:
  Scope scope_;
  std::shared_ptr<const Dataset> dataset_;
  std::string iterator_id_;  // empty when the dataset was invalid
};

// Registers the dataset (see above) and returns the iterator that builds its
// IteratorGetNext nodes. An invalid dataset (status() not OK) records its error in
// the scope; a null one records InvalidArgument.
OneShotIterator MakeOneShotIterator(const Scope& scope, std::shared_ptr<const Dataset> dataset);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_DATA_ITERATOR_OPS_H_
