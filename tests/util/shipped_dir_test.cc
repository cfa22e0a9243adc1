#include "util/shipped_dir.h"

#include <gtest/gtest.h>

namespace specplan {
namespace {

TEST(ShippedDir, PathIsInsideComparesWholeComponents) {
  EXPECT_TRUE(PathIsInside("/a/calib/h100/x.json", "/a/calib"));
  EXPECT_TRUE(PathIsInside("/a/calib/h100/x.json", "/a/calib/"));
  EXPECT_TRUE(PathIsInside("/a/docs/../calib/x.json", "/a/calib"));
  EXPECT_TRUE(PathIsInside("/a/calib", "/a/calib"));
  EXPECT_FALSE(PathIsInside("/a/calib-mine/x.json", "/a/calib"));
  EXPECT_FALSE(PathIsInside("/a/x.json", "/a/calib"));
  EXPECT_FALSE(PathIsInside("/a/x.json", ""));
}

TEST(ShippedDir, CheckNotShippedNamesThePathAndTheWayOut) {
  const absl::Status st = CheckNotShipped("--out", "/a/calib/x.json", {"/b", "/a/calib"}, false);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "--out /a/calib/x.json: inside the shipped profiles directory /a/calib, which is not "
            "overwritten by default; pass --out FILE to write elsewhere, or --force to write "
            "there");
  EXPECT_TRUE(CheckNotShipped("--out", "/a/calib/x.json", {"/a/calib"}, true).ok());
  EXPECT_TRUE(CheckNotShipped("--out", "/tmp/x.json", {"/a/calib"}, false).ok());
}

}  // namespace
}  // namespace specplan
