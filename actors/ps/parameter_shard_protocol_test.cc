// The parameter shard actor's protocols under CAF's deterministic test coordinator:
// workers are actors that send one request each and record the answer; every message
// is delivered by stepping the scheduler and time moves only on the virtual clock.
// No threads, no sockets, no sleeps.
//
// Runs under CAF's own test engine (the DSL's fixtures need it).

#define CAF_SUITE parameter_shard_protocol
#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>
#include <gmock/gmock.h>

#include <optional>

#include "actors/ps/bulk_gradients.h"
#include "actors/protocol/messages.h"
#include "actors/ps/parameter_shard.h"
#include "actors/protocol/shard_messages.h"

using namespace actorflow;

namespace {

using PullReply = ShardPullReply;
using PushReply = ShardPushReply;
using ShardStats = ShardStats;

struct ShardTestConfig : caf::actor_system_config {
  ShardTestConfig() { RegisterMessageTypes(*this); }
};

template <class T>
using Answer = std::shared_ptr<std::optional<T>>;

// GoogleMock's substring matcher under CAF's test engine.
bool HasText(const std::string& text, const std::string& part) {
  return ::testing::Value(text, ::testing::HasSubstr(part));
}

struct fixture : test_coordinator_fixture<ShardTestConfig> {
  ShardActor shard;
  std::vector<caf::actor> workers;

  void Start(UpdateMode mode, int total, int aggregate = 1, int bound = 0) {
    ShardConfig c;
    c.mode = mode;
    c.total_replicas = total;
    c.replicas_to_aggregate = aggregate;
    c.staleness_bound = bound;
    c.optimizer = "sgd";
    c.learning_rate = 1.0;
    auto spawned = SpawnParameterShard(sys, "/job:ps/replica:0/task:0 shard 'p'", c);
    CAF_REQUIRE(spawned.ok());
    shard = *spawned;
    auto init = Ask<Status>(shard_init_atom::value, std::vector<std::string>{"w"},
                            std::vector<Tensor>{Tensor::FromVector<float>({1, 2})});
    Drain();
    CAF_REQUIRE(init->has_value() && (*init)->ok());
  }

  // An actor that sends `xs` to the shard as a request and keeps the answer.
  template <class Reply, class... Ts>
  Answer<Reply> Ask(Ts... xs) {
    auto answer = std::make_shared<std::optional<Reply>>();
    ShardActor target = shard;
    sys.spawn([=](caf::event_based_actor* self) {
      self->request(target, caf::infinite, xs...).then([=](Reply& r) { *answer = r; });
    });
    return answer;
  }

  Answer<PushReply> Push(int worker, int64_t base, std::vector<float> g, int64_t timeout_ms = 0) {
    ShardPushArgs p;
    p.worker = worker;
    p.base_version = base;
    p.names = {"w"};
    p.gradients = {Tensor::FromVector<float>(g)};
    return Ask<PushReply>(shard_push_atom::value, p, timeout_ms);
  }

  // A push whose one gradient comes apart, keyed BulkGradientKey(key, 0).
  Answer<PushReply> PushApart(int worker, int64_t base, const std::string& key,
                              int64_t timeout_ms = 0) {
    ShardPushArgs p;
    p.worker = worker;
    p.base_version = base;
    p.names = {"w"};
    p.bulk_key = key;
    return Ask<PushReply>(shard_push_atom::value, p, timeout_ms);
  }

  void SendGradient(const std::string& key, std::vector<float> g) {
    caf::anon_send(shard, shard_bulk_atom::value, BulkGradientKey(key, 0),
                   Tensor::FromVector<float>(g));
  }

  Answer<PullReply> Pull(int64_t min_version = 0, int64_t timeout_ms = 0) {
    return Ask<PullReply>(shard_pull_atom::value, min_version, timeout_ms);
  }

  // Joins worker `index` with a fresh actor standing for the worker process.
  void Join(int index) {
    caf::actor worker =
        sys.spawn([](caf::event_based_actor*) -> caf::behavior { return {[](int32_t) {}}; });
    workers.push_back(worker);
    auto joined = Ask<Status>(shard_join_atom::value, int32_t{index}, worker);
    Drain();
    CAF_REQUIRE(joined->has_value() && (*joined)->ok());
  }

  std::vector<float> Value() {
    auto r = Pull();
    Drain();
    CAF_REQUIRE(r->has_value());
    const Tensor& t = (*r)->values.at(0);
    return {t.data<float>()[0], t.data<float>()[1]};
  }

  ShardStats Stats() {
    auto s = Ask<ShardStats>(shard_stats_atom::value);
    Drain();
    CAF_REQUIRE(s->has_value());
    return **s;
  }

  // Delivers every pending message without firing timers.
  void Drain() {
    while (sched.try_run_once()) {
    }
  }

  ~fixture() {
    for (auto& w : workers) caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
    if (shard) caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
    run();
  }
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(parameter_shard_protocol_tests, fixture)

CAF_TEST(sync with three workers applies two gradients and drops the third as stale) {
  Start(UpdateMode::kSync, 3, 2);
  auto first = Push(0, 0, {1, 1});
  Drain();
  CAF_CHECK(!first->has_value());  // parked: one of two gradients
  auto second = Push(1, 0, {3, 1});
  Drain();
  CAF_REQUIRE(first->has_value() && second->has_value());
  CAF_CHECK((*first)->applied);
  CAF_CHECK((*second)->applied);
  CAF_CHECK_EQUAL((*first)->version, 1);
  auto third = Push(2, 0, {100, 100});  // the backup worker, computed on version 0
  Drain();
  CAF_REQUIRE(third->has_value());
  CAF_CHECK((*third)->status.ok());
  CAF_CHECK(!(*third)->applied);
  CAF_CHECK_EQUAL((*third)->staleness, 1);
  CAF_CHECK(Value() == (std::vector<float>{-1, 1}));  // averaged (2, 1), applied once
  CAF_CHECK_EQUAL(Stats().gradients_dropped_stale, 1);
}

CAF_TEST(ssp parks a worker too far ahead and releases it when the slowest pushes) {
  Start(UpdateMode::kStaleSynchronous, 2, 1, /*bound=*/1);
  auto a1 = Push(0, 0, {0, 0});
  Drain();
  CAF_REQUIRE(a1->has_value());
  auto a2 = Push(0, 1, {0, 0});
  Drain();
  CAF_CHECK(!a2->has_value());
  CAF_CHECK_EQUAL(Stats().parked_pushes, 1);
  auto b1 = Push(1, 0, {0, 0});
  Drain();
  CAF_REQUIRE(a2->has_value() && b1->has_value());
  CAF_CHECK((*a2)->applied);
  CAF_CHECK_EQUAL(Stats().parked_pushes, 0);
}

CAF_TEST(an ssp push parked past its deadline is answered on the virtual clock) {
  Start(UpdateMode::kStaleSynchronous, 2, 1, /*bound=*/0);
  auto parked = Push(0, 0, {0, 0}, /*timeout_ms=*/100);
  Drain();
  CAF_CHECK(!parked->has_value());
  sched.advance_time(std::chrono::milliseconds(99));
  Drain();
  CAF_CHECK(!parked->has_value());
  sched.advance_time(std::chrono::milliseconds(2));
  Drain();
  CAF_REQUIRE(parked->has_value());
  CAF_CHECK_EQUAL((*parked)->status.code(), Code::kDeadlineExceeded);
  CAF_CHECK(HasText((*parked)->status.message(), "ahead of the slowest live worker"));
  CAF_CHECK_EQUAL(Stats().parked_pushes, 0);
}

CAF_TEST(a worker dying under sync does not stall the others when a backup covers it) {
  Start(UpdateMode::kSync, 3, 2);
  Join(0);
  Join(1);
  Join(2);
  auto first = Push(0, 0, {1, 1});
  Drain();
  CAF_CHECK(!first->has_value());
  caf::anon_send_exit(workers[1], caf::exit_reason::kill);
  Drain();
  CAF_CHECK(Stats().workers_lost == std::vector<int>{1});
  CAF_CHECK(!first->has_value());
  auto second = Push(2, 0, {1, 1});
  Drain();
  CAF_REQUIRE(first->has_value() && second->has_value());
  CAF_CHECK((*first)->applied && (*second)->applied);
  CAF_CHECK_EQUAL((*second)->version, 1);
}

CAF_TEST(a worker dying under sync without a backup fails the waiters naming it) {
  Start(UpdateMode::kSync, 2, 2);
  Join(0);
  Join(1);
  auto first = Push(0, 0, {1, 1});
  Drain();
  caf::anon_send_exit(workers[1], caf::exit_reason::kill);
  Drain();
  CAF_REQUIRE(first->has_value());
  CAF_CHECK_EQUAL((*first)->status.code(), Code::kUnavailable);
  CAF_CHECK(HasText((*first)->status.message(), "lost: worker 1"));
}

CAF_TEST(a pull before the chief initializes waits for it or for its deadline) {
  ShardConfig c;
  c.mode = UpdateMode::kAsync;
  auto spawned = SpawnParameterShard(sys, "ps0", c);
  CAF_REQUIRE(spawned.ok());
  shard = *spawned;
  auto bounded = Pull(0, /*timeout_ms=*/50);
  auto patient = Pull(0, /*timeout_ms=*/0);
  Drain();
  CAF_CHECK(!bounded->has_value() && !patient->has_value());
  sched.advance_time(std::chrono::milliseconds(60));
  Drain();
  CAF_REQUIRE(bounded->has_value());
  CAF_CHECK_EQUAL((*bounded)->status.code(), Code::kDeadlineExceeded);
  CAF_CHECK(!patient->has_value());
  auto init = Ask<Status>(shard_init_atom::value, std::vector<std::string>{"v"},
                          std::vector<Tensor>{Tensor::FromVector<float>({4})});
  Drain();
  CAF_REQUIRE(patient->has_value());
  CAF_CHECK((*patient)->status.ok());
  CAF_CHECK_EQUAL((*patient)->values.at(0).data<float>()[0], 4.0f);
}

CAF_TEST(a parked request is forgotten when its requester dies) {
  Start(UpdateMode::kAsync, 1);
  caf::actor requester = sys.spawn([=](caf::event_based_actor* self) -> caf::behavior {
    self->request(shard, caf::infinite, shard_pull_atom::value, int64_t{5}, int64_t{0})
        .then([](PullReply&) {});
    return {[](int32_t) {}};
  });
  Drain();
  CAF_CHECK_EQUAL(Stats().parked_pulls, 1);
  caf::anon_send_exit(requester, caf::exit_reason::kill);
  Drain();
  CAF_CHECK_EQUAL(Stats().parked_pulls, 0);
}

CAF_TEST(a wrong shape is rejected naming the variable and nothing is applied) {
  Start(UpdateMode::kAsync, 1);
  auto bad = Push(0, 0, {1, 2, 3});
  Drain();
  CAF_REQUIRE(bad->has_value());
  CAF_CHECK_EQUAL((*bad)->status.code(), Code::kInvalidArgument);
  CAF_CHECK(HasText((*bad)->status.message(), "variable 'w'"));
  CAF_CHECK(Value() == (std::vector<float>{1, 2}));
  CAF_CHECK_EQUAL(Stats().version, 0);
}

CAF_TEST(get or create returns the same shard and refuses another mode) {
  TaskServices services;
  services.task_name = "/job:ps/replica:0/task:0";
  caf::actor front = sys.spawn([&services](caf::event_based_actor* self) -> caf::behavior {
    return {[self, &services](get_shard_atom, const std::string& name,
                              const ShardConfig& c) -> caf::result<Status, ShardActor> {
      return GetOrCreateShard(self, services, name, c);
    }};
  });
  ShardConfig sync;
  sync.mode = UpdateMode::kSync;
  sync.total_replicas = 2;
  sync.replicas_to_aggregate = 2;
  ShardConfig async = sync;
  async.mode = UpdateMode::kAsync;
  ShardConfig bad = sync;
  bad.replicas_to_aggregate = 3;

  struct Got {
    Status status;
    ShardActor actor;
  };
  auto ask = [&](const ShardConfig& c) {
    auto got = std::make_shared<std::optional<Got>>();
    sys.spawn([=](caf::event_based_actor* self) {
      self->request(front, caf::infinite, get_shard_atom::value, std::string("p/model"), c)
          .then([=](Status& s, ShardActor& a) {
            *got = Got{s, a};
          });
    });
    Drain();
    CAF_REQUIRE(got->has_value());
    return **got;
  };
  Got first = ask(sync);
  CAF_REQUIRE(first.status.ok());
  CAF_CHECK(first.actor);
  Got again = ask(sync);
  CAF_CHECK(again.status.ok());
  CAF_CHECK(again.actor == first.actor);
  Got conflict = ask(async);
  CAF_CHECK_EQUAL(conflict.status.code(), Code::kFailedPrecondition);
  CAF_CHECK(HasText(conflict.status.message(), "sync 2 of 2"));
  CAF_CHECK(!conflict.actor);
  Got invalid = ask(bad);
  CAF_CHECK_EQUAL(invalid.status.code(), Code::kInvalidArgument);
  CAF_CHECK(HasText(invalid.status.message(), "replicas_to_aggregate=3"));
  ClearShards(services, {});
  caf::anon_send_exit(front, caf::exit_reason::user_shutdown);
  Drain();
}

CAF_TEST(a standby receives a copy after every update and a shard cannot be its own standby) {
  Start(UpdateMode::kSync, 2, 2);
  ShardConfig c;
  c.mode = UpdateMode::kSync;
  c.total_replicas = 2;
  c.replicas_to_aggregate = 2;
  c.optimizer = "sgd";
  c.learning_rate = 1.0;
  auto spawned = SpawnParameterShard(sys, "/job:ps/replica:0/task:1 shard 'p/standby_of_0'", c);
  CAF_REQUIRE(spawned.ok());
  ShardActor standby = *spawned;
  auto self_standby = Ask<Status>(shard_standby_atom::value, caf::actor_cast<caf::actor>(shard));
  auto linked = Ask<Status>(shard_standby_atom::value, caf::actor_cast<caf::actor>(standby));
  Drain();
  CAF_REQUIRE(self_standby->has_value() && linked->has_value());
  CAF_CHECK_EQUAL((*self_standby)->code(), Code::kInvalidArgument);
  CAF_CHECK((*linked)->ok());
  auto first = Push(0, 0, {1, 1});
  auto second = Push(1, 0, {3, 1});
  Drain();
  CAF_REQUIRE(first->has_value() && second->has_value());
  // The standby holds the primary's values at the primary's version.
  ShardActor primary = shard;
  shard = standby;
  auto copy = Pull();
  Drain();
  CAF_REQUIRE(copy->has_value());
  CAF_CHECK((*copy)->status.ok());
  CAF_CHECK_EQUAL((*copy)->version, 1);
  const Tensor& w = (*copy)->values.at(0);
  CAF_CHECK_EQUAL(w.data<float>()[0], -1.0f);  // 1 - (1 + 3) / 2
  CAF_CHECK_EQUAL(w.data<float>()[1], 1.0f);   // 2 - (1 + 1) / 2
  caf::anon_send_exit(standby, caf::exit_reason::user_shutdown);
  shard = primary;
}

CAF_TEST(a push whose gradients come apart is applied once they are all here in either order) {
  Start(UpdateMode::kAsync, 1);
  auto waits = PushApart(0, 0, "c/0/1");
  Drain();
  CAF_CHECK(!waits->has_value());
  CAF_CHECK(Value() == (std::vector<float>{1, 2}));  // nothing applied yet
  SendGradient("c/0/1", {1, 1});
  Drain();
  CAF_REQUIRE(waits->has_value());
  CAF_CHECK((*waits)->status.ok() && (*waits)->applied);
  CAF_CHECK(Value() == (std::vector<float>{0, 1}));
  SendGradient("c/0/2", {0, 1});  // before its push this time
  Drain();
  auto at_once = PushApart(0, 1, "c/0/2");
  Drain();
  CAF_REQUIRE(at_once->has_value());
  CAF_CHECK((*at_once)->applied);
  CAF_CHECK_EQUAL((*at_once)->version, 2);
  CAF_CHECK(Value() == (std::vector<float>{0, 0}));
}

CAF_TEST(a push whose gradients do not come by its deadline is not applied and says so) {
  Start(UpdateMode::kAsync, 1);
  auto waits = PushApart(0, 0, "c/0/1", /*timeout_ms=*/100);
  Drain();
  sched.advance_time(std::chrono::milliseconds(99));
  Drain();
  CAF_CHECK(!waits->has_value());
  sched.advance_time(std::chrono::milliseconds(2));
  Drain();
  CAF_REQUIRE(waits->has_value());
  CAF_CHECK_EQUAL((*waits)->status.code(), Code::kDeadlineExceeded);
  CAF_CHECK(!(*waits)->applied);
  CAF_CHECK(HasText((*waits)->status.message(), "sent apart"));
  SendGradient("c/0/1", {1, 1});  // too late: an orphan, applied to nothing
  Drain();
  CAF_CHECK(Value() == (std::vector<float>{1, 2}));
  CAF_CHECK_EQUAL(Stats().version, 0);
}

CAF_TEST_FIXTURE_SCOPE_END()
