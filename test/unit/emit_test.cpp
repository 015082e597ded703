// Kubernetes names derived from .avf names, and YAML that reads back as
// written: strings stay strings, numbers stay numbers, scripts keep their text.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "deploy/k8s_names.h"
#include "emit/scripts.h"
#include "emit/yaml_writer.h"

namespace avf::emit {
namespace {

using deploy::Dns1035Label;
using deploy::IsDns1035Label;
using deploy::IsDns1123Label;

TEST(K8sNames, MapsAvfNames) {
  EXPECT_EQ(Dns1035Label("llama7b_pretrain"), "llama7b-pretrain");
  EXPECT_EQ(Dns1035Label("Big__Job"), "big-job");
  EXPECT_EQ(Dns1035Label("_x_"), "x");
  EXPECT_EQ(Dns1035Label("job.v2"), "job-v2");
  EXPECT_EQ(Dns1035Label("7b_run"), "b-run");  // must start with a letter
}

TEST(K8sNames, NothingValidLeft) {
  EXPECT_EQ(Dns1035Label("___"), std::nullopt);
  EXPECT_EQ(Dns1035Label("123"), std::nullopt);
  EXPECT_EQ(Dns1035Label(""), std::nullopt);
}

TEST(K8sNames, LongNamesAreCutWithAHash) {
  std::string a(100, 'a'), b = std::string(99, 'a') + "b";
  auto la = Dns1035Label(a), lb = Dns1035Label(b);
  ASSERT_TRUE(la && lb);
  EXPECT_EQ(la->size(), 63u);
  EXPECT_EQ(lb->size(), 63u);
  EXPECT_NE(*la, *lb);  // same prefix, different hash
  EXPECT_TRUE(IsDns1035Label(*la));
  EXPECT_EQ(Dns1035Label(a), la);  // deterministic
  auto short_one = Dns1035Label(a, 20);
  ASSERT_TRUE(short_one);
  EXPECT_EQ(short_one->size(), 20u);
}

TEST(K8sNames, Validation) {
  EXPECT_TRUE(IsDns1035Label("a-1"));
  EXPECT_FALSE(IsDns1035Label("1-a"));
  EXPECT_TRUE(IsDns1123Label("1-a"));
  EXPECT_FALSE(IsDns1123Label("a-"));
  EXPECT_FALSE(IsDns1123Label("A"));
  EXPECT_FALSE(IsDns1123Label(std::string(64, 'a')));
}

TEST(YamlWriter, StringsThatLookLikeOtherTypesStayStrings) {
  YamlWriter w("source: job.avf\njob: x");
  w.Map([&] {
    for (const char* s : {"true", "no", "8080", "1e3", "null", "~", "", "y"}) w.Field(std::string("k") + s, s);
    w.Field("count", int64_t{8});
    w.Field("flag", true);
  });
  std::string text = w.Output();
  EXPECT_EQ(text.rfind("# source: job.avf\n# job: x\n", 0), 0u) << text;
  YAML::Node n = YAML::Load(text);
  for (const char* s : {"true", "no", "8080", "1e3", "null", "~", "", "y"}) {
    YAML::Node v = n[std::string("k") + s];
    ASSERT_TRUE(v.IsScalar()) << s;
    EXPECT_EQ(v.Tag(), "!") << "not quoted: " << s;  // quoted scalars carry the non-specific tag "!"
    EXPECT_EQ(v.as<std::string>(), s);
  }
  EXPECT_EQ(n["count"].as<int>(), 8);
  EXPECT_EQ(n["count"].Tag(), "?");  // plain: an integer to every reader
  EXPECT_TRUE(n["flag"].as<bool>());
}

TEST(YamlWriter, ScriptsKeepTheirText) {
  for (std::string script :
       {"set -e\necho \"$RANK\"\n", "one line\n", " leading space\n", "two\n\n", "no newline", "tab\there\n"}) {
    YamlWriter w("");
    w.Map([&] {
      w.Key("script");
      w.Text(script);
    });
    YAML::Node n = YAML::Load(w.Output());
    EXPECT_EQ(n["script"].as<std::string>(), script) << w.Output();
  }
}

TEST(YamlWriter, Documents) {
  YamlWriter w("");
  w.Map([&] { w.Field("kind", "ConfigMap"); });
  w.NewDocument();
  w.Map([&] { w.Field("kind", "Service"); });
  std::vector<YAML::Node> docs = YAML::LoadAll(w.Output());
  ASSERT_EQ(docs.size(), 2u) << w.Output();
  EXPECT_EQ(docs[1]["kind"].as<std::string>(), "Service");
}

// apimachinery's rules: qualified names, label values, resource names.
TEST(K8sNames, LabelsAndResources) {
  EXPECT_EQ(deploy::LabelKeyProblem("nvidia.com/gpu.product"), "");
  EXPECT_EQ(deploy::LabelKeyProblem("rack"), "");
  EXPECT_NE(deploy::LabelKeyProblem("Bad_Prefix/x"), "");
  EXPECT_NE(deploy::LabelKeyProblem("a/-x"), "");
  EXPECT_NE(deploy::LabelKeyProblem(std::string(64, 'a')), "");
  EXPECT_EQ(deploy::LabelValueProblem(""), "");
  EXPECT_EQ(deploy::LabelValueProblem("NVIDIA-A100-SXM4-80GB"), "");
  EXPECT_NE(deploy::LabelValueProblem("a b"), "");
  EXPECT_EQ(deploy::ResourceNameProblem("rdma/rdma_shared_device_a"), "");
  EXPECT_NE(deploy::ResourceNameProblem("rdma"), "");
  EXPECT_NE(deploy::ResourceNameProblem("kubernetes.io/x"), "");
  EXPECT_NE(deploy::ResourceNameProblem("node.kubernetes.io/x"), "");
  EXPECT_TRUE(deploy::IsDns1123Subdomain("ceph-s3"));
  EXPECT_TRUE(deploy::IsDns1123Subdomain("a.b-c.d"));
  EXPECT_FALSE(deploy::IsDns1123Subdomain("Ceph"));
  EXPECT_FALSE(deploy::IsDns1123Subdomain("a..b"));
  EXPECT_FALSE(deploy::IsDns1123Subdomain(std::string(254, 'a')));
}

TEST(K8sNames, Taints) {
  std::string why;
  deploy::Taint t = deploy::ParseTaint("nvidia.com/gpu=present:NoSchedule", why);
  EXPECT_EQ(why, "");
  EXPECT_EQ(t.key, "nvidia.com/gpu");
  EXPECT_EQ(t.value, "present");
  EXPECT_EQ(t.effect, "NoSchedule");
  t = deploy::ParseTaint("dedicated:NoExecute", why);
  EXPECT_EQ(why, "");
  EXPECT_EQ(t.value, "");
  deploy::ParseTaint("dedicated=x", why);
  EXPECT_NE(why, "");
  why.clear();
  deploy::ParseTaint("k=v:Sometimes", why);
  EXPECT_NE(why.find("Sometimes"), std::string::npos);
}

// One shell word whatever the text, including quotes and `$`.
TEST(Scripts, ShellQuote) {
  EXPECT_EQ(ShellQuote("plain"), "'plain'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("$HOME `x`"), "'$HOME `x`'");
  EXPECT_EQ(ShellQuote(""), "''");
}

}  // namespace
}  // namespace avf::emit
