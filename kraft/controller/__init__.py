"""The quorum controller's pure logic: commands turn the current metadata image and a request
into (records, response); only replaying committed records changes state, so a standby and a restart replay the same code."""
