// The model and training flags shared by train and tune: their parsing and checks
// (each error names its flag), the classifier they describe, and the result lines.
#include "tools/train/train_flags.h"
#include "tools/train/train_datasets.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace actorflow {
namespace cli {
namespace {

using ::testing::HasSubstr;

std::string MessageOf(const Status& status) { return status.message(); }

TEST(ParseHiddenUnitsTest, ReadsCommaSeparatedSizesIgnoringSpaces) {
  auto units = ParseHiddenUnits("10, 20 ,5");
  ASSERT_TRUE(units.ok()) << units.status();
  EXPECT_EQ(*units, (std::vector<int64_t>{10, 20, 5}));
}

TEST(ParseHiddenUnitsTest, ErrorsStartWithTheNameTheTextCameFrom) {
  EXPECT_EQ(MessageOf(ParseHiddenUnits("10,x").status()),
            "--hidden '10,x': expected comma-separated layer sizes >= 1, e.g. 10,10");
  EXPECT_EQ(MessageOf(ParseHiddenUnits("").status()).rfind("--hidden '':", 0), 0u);
  const std::string zero = MessageOf(ParseHiddenUnits("10,0").status());
  EXPECT_EQ(zero.rfind("--hidden: ", 0), 0u) << zero;
  EXPECT_THAT(zero, HasSubstr("layer 2")) << zero;
  const std::string grid = MessageOf(ParseHiddenUnits("8,", "grid parameter hidden").status());
  EXPECT_EQ(grid.rfind("grid parameter hidden '8,':", 0), 0u) << grid;
}

TEST(CheckModelAndTrainingFlagsTest, TrainsDefaultsPass) {
  EXPECT_TRUE(CheckModelAndTrainingFlags(TrainCommandOptions()).ok());
}

TEST(CheckModelAndTrainingFlagsTest, EachBadValueNamesItsFlag) {
  struct Case {
    void (*set)(TrainCommandOptions*);
    std::string says;
  };
  const Case cases[] = {
      {[](TrainCommandOptions* o) { o->hidden = "0"; }, "--hidden"},
      {[](TrainCommandOptions* o) { o->classes = 1; }, "--classes 1"},
      {[](TrainCommandOptions* o) { o->batch = 0; }, "--batch 0"},
      {[](TrainCommandOptions* o) { o->steps = 0; }, "--steps 0"},
      {[](TrainCommandOptions* o) { o->epochs = -1; }, "--epochs -1"},
      {[](TrainCommandOptions* o) { o->timeout_ms = -1; }, "--timeout-ms -1"},
      {[](TrainCommandOptions* o) { o->optimizer = "rmsprop"; }, "--optimizer: "},
      {[](TrainCommandOptions* o) { o->learning_rate = -1; }, "--lr: "},
      {[](TrainCommandOptions* o) { o->lr_decay = 0; }, "--lr-decay 0"},
      {[](TrainCommandOptions* o) { o->lr_decay = 1.5; }, "--lr-decay 1.5"},
      {[](TrainCommandOptions* o) { o->lr_decay = NAN; }, "--lr-decay"},
      {[](TrainCommandOptions* o) { o->model = "gru"; }, "--model: unknown model 'gru'"},
      {[](TrainCommandOptions* o) { o->split = "diagonal"; }, "--split: unknown split"},
      {[](TrainCommandOptions* o) { o->split = "towers"; }, "the mlp has splits none, layer"},
  };
  for (const Case& c : cases) {
    TrainCommandOptions options;
    c.set(&options);
    Status status = CheckModelAndTrainingFlags(options);
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << c.says;
    EXPECT_THAT(status.message(), HasSubstr(c.says)) << status;
  }
}

TEST(CheckPipelineFlagsTest, APipelineOfTheMlpsLayerSplitWithADividedBatchPasses) {
  TrainCommandOptions options;
  EXPECT_TRUE(CheckPipelineFlags(options).ok());  // no --pipeline
  options.split = "layer";
  options.pipeline = 8;
  options.batch = 32;
  EXPECT_TRUE(CheckPipelineFlags(options).ok());
  options.schedule = "gpipe";
  EXPECT_TRUE(CheckPipelineFlags(options).ok());
}

TEST(CheckPipelineFlagsTest, EachBadCombinationNamesItsFlagsAndNumbers) {
  struct Case {
    void (*set)(TrainCommandOptions*);
    std::string says;
  };
  const Case cases[] = {
      {[](TrainCommandOptions* o) { o->split = "none"; },
       "--pipeline 4: pipelines only --model mlp --split layer, got --model mlp --split none"},
      {[](TrainCommandOptions* o) { o->model = "cnn"; },
       "--pipeline 4: pipelines only --model mlp --split layer, got --model cnn"},
      {[](TrainCommandOptions* o) { o->batch = 3; }, "--pipeline 4 --batch 3: more micro-batches"},
      {[](TrainCommandOptions* o) { o->batch = 30; },
       "--pipeline 4 --batch 30: --batch must be a multiple of --pipeline"},
      {[](TrainCommandOptions* o) { o->pipeline = -2; }, "--pipeline -2: must be >= 1"},
      {[](TrainCommandOptions* o) { o->schedule = "zigzag"; }, "--schedule: unknown pipeline"},
      {[](TrainCommandOptions* o) {
         o->pipeline = 0;
         o->schedule = "gpipe";
       },
       "--schedule gpipe: a schedule needs --pipeline M"},
  };
  for (const Case& c : cases) {
    TrainCommandOptions options;
    options.split = "layer";
    options.pipeline = 4;
    options.batch = 32;
    c.set(&options);
    Status status = CheckPipelineFlags(options);
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << c.says;
    EXPECT_THAT(status.message(), HasSubstr(c.says)) << status;
    EXPECT_EQ(status.message().find('\n'), std::string::npos) << status;
  }
}

TEST(AddModelAndDataFlagsTest, DeclaresTrainsFlagsWithTheirDefaults) {
  CLI::App app;
  TrainCommandOptions options;
  AddModelAndDataFlags(&app, &options);
  app.parse("--normalize --batch 2 --hidden 32,16");
  EXPECT_EQ(options.hidden, "32,16");
  EXPECT_EQ(options.batch, 2);
  EXPECT_TRUE(options.normalize);
  EXPECT_EQ(options.optimizer, "adam");
  EXPECT_EQ(options.steps, 1000);
  EXPECT_EQ(app.get_option("--seed")->get_default_str(), "1");
}

TEST(ClassifierOptionsFromFlagsTest, CarriesTheFlagsTheDataAndTheClasses) {
  TrainCommandOptions flags;
  flags.hidden = "16,8";
  flags.optimizer = "sgd";
  flags.learning_rate = 0.5;
  flags.seed = 9;
  flags.timeout_ms = 1234;
  flags.normalize = true;
  flags.checkpoint_dir = "/tmp/model";
  auto data = LoadTrainingData(flags);  // the bundled Iris split
  ASSERT_TRUE(data.ok()) << data.status();
  auto model = ClassifierOptionsFromFlags(flags, *data, 3);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->hidden_units, (std::vector<int64_t>{16, 8}));
  EXPECT_EQ(model->n_classes, 3);
  EXPECT_EQ(model->optimizer, "sgd");
  EXPECT_EQ(model->learning_rate, 0.5);
  EXPECT_EQ(model->seed, 9u);
  EXPECT_EQ(model->timeout_in_ms, 1234);
  EXPECT_EQ(model->model_dir, "/tmp/model");
  EXPECT_EQ(model->label_column, data->label_column);
  ASSERT_EQ(model->feature_columns.size(), 4u);
  EXPECT_TRUE(model->feature_columns[0].normalization.has_value());

  const DNNModelSpec spec = ModelSpecOf(*model);
  EXPECT_EQ(spec.hidden_units, model->hidden_units);
  EXPECT_EQ(spec.n_classes, 3);
  EXPECT_EQ(spec.label_column, data->label_column);
  EXPECT_EQ(spec.feature_columns, model->feature_columns);
}

TEST(TrainStepsTest, EpochsCountWholePassesAndOverrideSteps) {
  TrainCommandOptions options;
  options.steps = 500;
  EXPECT_EQ(MaxTrainSteps(options), 500);
  EXPECT_EQ(PlannedTrainSteps(options, 120, 32), 500);
  options.epochs = 3;
  EXPECT_EQ(MaxTrainSteps(options), -1);
  EXPECT_EQ(PlannedTrainSteps(options, 120, 32), 12);  // 4 batches a pass
  EXPECT_EQ(PlannedTrainSteps(options, 120, 64), 6);
}

EvalResult SomeEval() {
  EvalResult eval;
  eval.accuracy = 29.0 / 30;
  eval.loss = 0.25;
  eval.global_step = 1000;
  eval.num_examples = 30;
  return eval;
}

TEST(PrintTrainResultTest, TextEndsWithTheAccuracyLineAfterTheCheckpointLine) {
  TrainCommandOptions options;
  options.checkpoint_dir = "models/iris";
  std::ostringstream out;
  PrintTrainResult(options, SomeEval(), TrainResult(), 1.5, 3, nlohmann::ordered_json::object(),
                   out);
  EXPECT_EQ(out.str(),
            "checkpoint saved in models/iris\n"
            "test accuracy 0.9667 (29/30), loss 0.2500, global step 1000, 1.50 s\n");
}

TEST(PrintTrainResultTest, JsonIsOneLineWithTheContractKeysFirstAndExtrasBeforeTheDirectory) {
  TrainCommandOptions options;
  options.json = true;
  options.checkpoint_dir = "models/iris";
  TrainResult trained;
  trained.steps = 1000;
  trained.last_loss = 0.125;
  nlohmann::ordered_json extra;
  extra["replication"] = "in-graph";
  extra["towers"] = 2;
  std::ostringstream out;
  PrintTrainResult(options, SomeEval(), trained, 1.5, 3, extra, out);
  const std::string text = out.str();
  ASSERT_EQ(text.find('\n'), text.size() - 1) << text;
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"accuracy", "loss", "global_step", "seconds", "steps",
                                            "train_loss", "examples", "classes", "replication",
                                            "towers", "checkpoint_dir"}));
  EXPECT_EQ(j["steps"], 1000);
  EXPECT_EQ(j["classes"], 3);
}

TEST(ApplyModelDefaultsTest, CnnAndRnnTakeTheirOwnDefaultsOnlyForFlagsNotGiven) {
  TrainCommandOptions mlp;
  ApplyModelDefaults([](const std::string&) { return false; }, &mlp);
  EXPECT_EQ(mlp.hidden, TrainCommandOptions().hidden);  // mlp: the flags' own
  EXPECT_EQ(mlp.epochs, 0);

  TrainCommandOptions rnn;
  rnn.model = "rnn";
  rnn.hidden = "16";
  ApplyModelDefaults([](const std::string& flag) { return flag == "--hidden"; }, &rnn);
  EXPECT_EQ(rnn.hidden, "16");  // given
  ModelFlagDefaults defaults;
  ASSERT_TRUE(DefaultsOfModel("rnn", &defaults));
  EXPECT_EQ(rnn.epochs, defaults.epochs);
  EXPECT_EQ(rnn.learning_rate, defaults.learning_rate);
  EXPECT_EQ(ParseHiddenUnits(defaults.hidden).value().size(), 3u);  // three layers

  TrainCommandOptions steps;
  steps.model = "cnn";
  steps.steps = 7;
  ApplyModelDefaults([](const std::string& flag) { return flag == "--steps"; }, &steps);
  EXPECT_EQ(steps.epochs, 0);  // --steps keeps counting steps
  EXPECT_FALSE(DefaultsOfModel("gru", &defaults));
}

TEST(ApplyModelDefaultsTest, FashionMnistDecaysTheRateUnlessLrDecayIsGiven) {
  TrainCommandOptions fashion;
  fashion.dataset = "fashion-mnist";
  ApplyModelDefaults([](const std::string&) { return false; }, &fashion);
  EXPECT_EQ(fashion.lr_decay, kFashionLrDecay);
  // Its default rate is per batch of 100 rows: a sync update splits them.
  EXPECT_TRUE(fashion.split_batch_over_replicas);
  EXPECT_FALSE(fashion.scale_lr_with_replicas);
  EXPECT_EQ(fashion.hidden, "256,128,100");
  TrainCommandOptions constant;
  constant.dataset = "fashion-mnist";
  constant.lr_decay = 1.0;
  ApplyModelDefaults([](const std::string& flag) { return flag == "--lr-decay"; }, &constant);
  EXPECT_EQ(constant.lr_decay, 1.0);
  TrainCommandOptions given_rate;
  given_rate.dataset = "fashion-mnist";
  ApplyModelDefaults([](const std::string& flag) { return flag == "--lr"; }, &given_rate);
  EXPECT_FALSE(given_rate.scale_lr_with_replicas);  // --lr is used as it is
  EXPECT_FALSE(given_rate.split_batch_over_replicas);
  TrainCommandOptions given_batch;  // each worker reads --batch: the rate scales
  given_batch.dataset = "fashion-mnist";
  ApplyModelDefaults([](const std::string& flag) { return flag == "--batch"; }, &given_batch);
  EXPECT_TRUE(given_batch.scale_lr_with_replicas);
  EXPECT_FALSE(given_batch.split_batch_over_replicas);
  TrainCommandOptions iris;  // no dataset: constant, as before
  ApplyModelDefaults([](const std::string&) { return false; }, &iris);
  EXPECT_EQ(iris.lr_decay, 1.0);
  EXPECT_FALSE(iris.scale_lr_with_replicas);
  EXPECT_FALSE(iris.split_batch_over_replicas);
}

TEST(DecayPerEpochTest, AnEpochIsTheUpdatesThatTakeEveryRowOnce) {
  EXPECT_FALSE(DecayPerEpoch(1.0, 60000, 100).enabled());
  const LearningRateDecay single = DecayPerEpoch(0.75, 60000, 100);
  EXPECT_EQ(single.decay_steps, 600);
  EXPECT_EQ(single.decay_rate, 0.75);
  EXPECT_EQ(DecayPerEpoch(0.75, 60000, 200).decay_steps, 300);  // sync, 2 batches each
  EXPECT_EQ(DecayPerEpoch(0.75, 150, 32).decay_steps, 5);       // a last, partial batch
  EXPECT_EQ(DecayPerEpoch(0.75, 10, 32).decay_steps, 1);
}

TEST(ShardRateLineTest, SaysHowTheDatasetsBatchOrRateMetTheBatchesAnUpdateAverages) {
  TrainerOptions trainer;
  trainer.learning_rate = 0.001;
  trainer.batch_size = 100;
  trainer.cluster = TrainerCluster::Local(1, 2);
  trainer.split_batch_over_replicas = true;
  EXPECT_EQ(ShardRateLine(trainer, DataParallelOptionsFor(trainer, 2, 60000)),
            "sync updates average 2 batches of 50 rows: 100 rows an update at learning rate "
            "0.001, as one process's batches (--batch sets each worker's batch)\n");
  EXPECT_EQ(ShardRateLine(trainer, DataParallelOptionsFor(trainer, 1, 60000)), "");
  trainer.policy.kind = TrainingPolicyKind::kElastic;  // not split: no line
  EXPECT_EQ(ShardRateLine(trainer, DataParallelOptionsFor(trainer, 2, 60000)), "");
  trainer.policy.kind = TrainingPolicyKind::kSync;
  trainer.split_batch_over_replicas = false;
  trainer.scale_learning_rate_with_replicas = true;
  EXPECT_THAT(ShardRateLine(trainer, DataParallelOptionsFor(trainer, 2, 60000)),
              HasSubstr("average 2 batches of 100: learning rate 0.002 (0.001 per batch"));
  trainer.policy.kind = TrainingPolicyKind::kAsync;  // each batch is an update
  EXPECT_EQ(ShardRateLine(trainer, DataParallelOptionsFor(trainer, 2, 60000)), "");
  trainer.policy.kind = TrainingPolicyKind::kSync;
  trainer.scale_learning_rate_with_replicas = false;  // --lr given
  EXPECT_EQ(ShardRateLine(trainer, DataParallelOptionsFor(trainer, 2, 60000)), "");
}

TEST(LocalDeviceNamesTest, ListsTheCpusOfTheLocalTaskInOrder) {
  const std::vector<std::string> names = LocalDeviceNames({{"CPU", 3}, {"GPU", 0}});
  EXPECT_EQ(names, (std::vector<std::string>{"/job:localhost/replica:0/task:0/device:CPU:0",
                                             "/job:localhost/replica:0/task:0/device:CPU:1",
                                             "/job:localhost/replica:0/task:0/device:CPU:2"}));
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
