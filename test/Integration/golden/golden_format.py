"""The lit test format of the golden cases (lit.local.cfg): one test per case.

A directory of Integration/Inputs with a config.json is the test
Integration/golden/<case>: the RUN line of golden-numerics.checks with %{case}
set to the case (run_goldens.sh on that case alone, checked by FileCheck with
the prefixes ALL and <case>). A module, not lit.local.cfg code, so that lit's
worker processes can unpickle the tests.
"""

import os

import lit.formats
import lit.Test
import lit.TestRunner


class CaseTest(lit.Test.Test):
    """A golden case: its script and checks are golden-numerics.checks (%s)."""

    def getSourcePath(self):
        return self.file_path


class GoldenCases(lit.formats.ShTest):
    def __init__(self, execute_external, checks, inputs):
        super().__init__(execute_external)
        self.checks = checks
        self.inputs = inputs

    def getTestsInDirectory(self, testSuite, path_in_suite, litConfig, localConfig):
        # Only in the directory of the checks, not below it (__pycache__).
        here = os.path.realpath(testSuite.getSourcePath(path_in_suite))
        if here != os.path.dirname(os.path.realpath(self.checks)):
            return
        for case in sorted(os.listdir(self.inputs)):
            if os.path.isfile(os.path.join(self.inputs, case, "config.json")):
                yield CaseTest(testSuite, path_in_suite + (case,), localConfig,
                               file_path=self.checks)

    def execute(self, test, litConfig):
        return lit.TestRunner.executeShTest(
            test, litConfig, self.execute_external,
            [("%{case}", test.path_in_suite[-1])])
