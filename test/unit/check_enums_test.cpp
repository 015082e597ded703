// The closed sets later phases decide on are enums (check/job_spec.h and
// cost/shape.h). Each must spell exactly the values the language's schema
// accepts, in the same order, so that extract.cpp maps every written value and
// plan.json spells it back unchanged.
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "check/job_spec.h"
#include "sema/schema.h"

namespace avf::check {
namespace {

using ast::DeclKind;

auto SchemaValues(const sema::RecordSchema& record, std::string_view field) -> std::vector<std::string_view> {
  const sema::FieldSchema* f = record.Find(field);
  EXPECT_NE(f, nullptr) << record.name << "." << field;
  return f ? f->enum_values : std::vector<std::string_view>{};
}

auto SubRecord(DeclKind kind, std::string_view field) -> const sema::RecordSchema& {
  const sema::FieldSchema* f = sema::SchemaOf(kind).Find(field);
  EXPECT_TRUE(f && f->record) << field;
  return *f->record;
}

template <typename E, size_t N>
void ExpectSpellings(const std::array<E, N>& all, const std::vector<std::string_view>& schema) {
  std::vector<std::string_view> names;
  for (E v : all) {
    names.push_back(Name(v));
    EXPECT_EQ(FromName(Name(v), all), v) << Name(v);
  }
  EXPECT_EQ(names, schema);
  EXPECT_FALSE(FromName("", all).has_value());
  EXPECT_FALSE(FromName("no-such-value", all).has_value());
}

TEST(ClosedSets, SpellTheSchemaValues) {
  ExpectSpellings(kStorageKinds, SchemaValues(sema::SchemaOf(DeclKind::Storage), "kind"));
  ExpectSpellings(kTokenFormats, SchemaValues(sema::SchemaOf(DeclKind::Dataset), "format"));
  ExpectSpellings(kLrSchedules, SchemaValues(SubRecord(DeclKind::Job, "optimizer"), "schedule"));
  ExpectSpellings(kSchedulers, SchemaValues(sema::SchemaOf(DeclKind::Cluster), "scheduler"));
  ExpectSpellings(kTargets, SchemaValues(sema::SchemaOf(DeclKind::Job), "target"));
  ExpectSpellings(kFabricKinds, SchemaValues(sema::SchemaOf(DeclKind::Fabric), "kind"));
  ExpectSpellings(cost::kArchs, SchemaValues(sema::SchemaOf(DeclKind::Model), "arch"));
  ExpectSpellings(cost::kPrecisions, SchemaValues(sema::SchemaOf(DeclKind::Job), "precision"));
  ExpectSpellings(cost::kSchedules, SchemaValues(SubRecord(DeclKind::Job, "parallel"), "schedule"));
  ExpectSpellings(cost::kRecomputes, SchemaValues(SubRecord(DeclKind::Job, "parallel"), "recompute"));
  ExpectSpellings(cost::kOptimizerKinds, SchemaValues(SubRecord(DeclKind::Job, "optimizer"), "kind"));
}

TEST(ClosedSets, StorageKindsAreObjectStoresOrFileSystems) {
  std::vector<std::string_view> objects, files;
  for (StorageKind k : kStorageKinds) (IsObjectStore(k) ? objects : files).push_back(Name(k));
  EXPECT_EQ(objects, (std::vector<std::string_view>{"ceph", "s3", "minio"}));
  EXPECT_EQ(files, (std::vector<std::string_view>{"beegfs", "lustre", "nfs", "pvc", "local"}));
  for (StorageKind k : kStorageKinds) EXPECT_NE(IsObjectStore(k), IsFileSystem(k));
  EXPECT_EQ(TokenBytes(TokenFormat::U16), 2);
  EXPECT_EQ(TokenBytes(TokenFormat::U32), 4);
}

}  // namespace
}  // namespace avf::check
