BEGIN TRANSACTION;
CREATE TABLE files (
    session TEXT NOT NULL REFERENCES sessions(name),
    kind INTEGER NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, sha256 BLOB NOT NULL,
    run_id TEXT NOT NULL,
    PRIMARY KEY (session, kind, path)
);
INSERT INTO "files" VALUES('stats',2,'_block1_dw_act_Relu.0.1795886036874792.npy',4224,X'00F4290ED9FC1D9E6B1E8A275478E472','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block1_dw_bn_BatchNormalization.0.1795886036874567.npy',4224,X'3591B60CA4DF776ACAF0030B4F34A6F7','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block1_dw_conv_Conv.0.1795886036874345.npy',4224,X'2B9ACADA3B460130F532DE005DE71128','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block1_pw_act_Relu.0.1795886036875638.npy',6272,X'36B87DB23EA2739F7A8DAAD06C2AFFDF','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block1_pw_bn_BatchNormalization.0.1795886036875267.npy',6272,X'D7AA3E7190E75161CA662A5D4848E914','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block1_pw_conv_Conv.0.1795886036875017.npy',6272,X'9053479996D983D4D8EA31F18DF46BD0','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block2_Add.0.1795886036876905.npy',6272,X'B7CC2BB55842D006227CC2601904F105','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block2_act_Relu.0.1795886036877104.npy',6272,X'C4A9FB3AE69A6365ACAFC4681C37B907','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block2_gconv_act_Relu.0.1795886036876269.npy',6272,X'6E6DEF642BD8FD23A9B2C22A3AC2AE3C','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block2_gconv_bn_BatchNormalization.0.1795886036876047.npy',6272,X'D46ECE56AB33CC549EACBCEC85862B10','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block2_gconv_conv_Conv.0.1795886036875844.npy',6272,X'6C52C259616C6CBBEAB3AB61497904F6','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block2_pw_bn_BatchNormalization.0.1795886036876694.npy',6272,X'EE0BBAC32B62A097D3A34E718F18064E','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block2_pw_conv_Conv.0.1795886036876470.npy',6272,X'8BAD072B489F809C9CEF5846D08987CA','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block3_act_Relu.0.1795886036877969.npy',640,X'1D5FAF6D6672C6727EF92175B53433F5','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block3_bn_BatchNormalization.0.1795886036877771.npy',640,X'4703A35F0D9F13E71A2DB1FF778F9482','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block3_conv_Conv.0.1795886036877569.npy',640,X'E363CAB72BF3C269AECD78CBC7B32723','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_block3_pool_AveragePool.0.1795886036877365.npy',1664,X'02F56B8AFA6FE7409744C73E6E24FFDB','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_head_Flatten.0.1795886036879072.npy',256,X'E03268DCAC5F8AF8E1C6D4C7A312185E','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_head_GlobalAveragePool.0.1795886036878846.npy',256,X'6513AD3FC41ACF967154EB3033BACBFB','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_head_Softmax.0.1795886036879527.npy',168,X'F3956E5A4714360440DC29E5886E8F13','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_head_fc_Gemm.0.1795886036879315.npy',168,X'CE7A7936FB29DB7535BF8ECC797A2795','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_stem_act_Relu.0.1795886036873849.npy',16512,X'F50B1B6508ED59F1144739B073A7EF65','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_stem_bn_BatchNormalization.0.1795886036873616.npy',16512,X'12EDC06D6EB2642106C44C1A5E0976B6','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_stem_conv_Conv.0.1795886036873350.npy',16512,X'B9B0F7E64C3C9673C52BC29354A88705','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'_stem_pool_MaxPool.0.1795886036874076.npy',4224,X'39D0A9867AEC06260FAB97F66AE4A7C5','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',2,'input.0.1795886036872778.npy',3200,X'56CDC8A86EFDB2FD6DA7D33573748F6B','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',4,'0.input.npy',3200,X'56CDC8A86EFDB2FD6DA7D33573748F6B','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',3,'fusion_rule.json',113851,X'6144179261CB97D22C4789058B74D268','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/Add._block2_Add.9.1.1795886036931963.csv',231,X'22552D5D8FD0383FDB7640C6FC5F8555','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/AvgPool._block3_pool_AveragePool.11.1.1795886036932530.csv',223,X'07B2AAAD03E996096199C41782335FC0','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/Cast.trans_Cast_0.1.1.1795886036914017.csv',229,X'D91927D9E1E1BF6075689A28B2DE4A22','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/Cast.trans_Cast_5.20.1.1795886036947934.csv',219,X'60A0028DF7B6E59C2C54D4DCA338AE62','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/Conv2D._block1_pw_conv_Conv_block1_pw_act_Relu.6.1.1795886036930633.csv',225,X'BD78E6F6A3BE64B38930A757A06A252C','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/Conv2D._block2_gconv_conv_Conv_block2_gconv_act_Relu.7.1.1795886036931246.csv',225,X'1960322CE1A90D11E56139C347BD4812','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/Conv2D._block2_pw_conv_Conv.8.1.1795886036931658.csv',232,X'B8FD0EE935DC94197C4F4DCC1DCD0D0C','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/Conv2D._block3_conv_Conv_block3_act_Relu.12.1.1795886036933075.csv',222,X'377693514628F0E414881D2AB7C643B3','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/Conv2D._stem_conv_Conv_stem_act_Relu.3.1.1795886036916530.csv',227,X'E1AA6ECCED5320C720D84E6B882983F3','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/DepthwiseConv2D._block1_dw_conv_Conv_block1_dw_act_Relu.5.1.1795886036929858.csv',225,X'5EF4C5E91F069B30F606F1031650B7A6','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/Flatten._head_Flatten.15.1.1795886036933490.csv',209,X'2CAA8E6EE00FAE49305F1220EEB1A0A1','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/GlobalAveragePool._head_GlobalAveragePool.13.1.1795886036933347.csv',220,X'4633A37C6D2604316E96BCD6BD92CB94','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/MatMulV2._head_fc_Gemm.17.1.1795886036933626.csv',232,X'FF32A3BE119D366C16D46907CB1E565F','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/MaxPool._stem_pool_MaxPool.4.1.1795886036917099.csv',224,X'A8CFB5A30133A45C3B91C881F9550A7C','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/Relu._block2_act_Relu.10.1.1795886036932036.csv',224,X'44410E6393777E6B6E65882DB2433A17','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/SoftmaxV2._head_Softmax.19.1.1795886036933749.csv',221,X'8B28D63C37D6778F826051FF54236733','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/TransData.trans_TransData_1.2.1.1795886036914410.csv',237,X'4560EEF5FBA4CC2A13F145F6C00038F4','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/TransData.trans_TransData_2.14.1.1795886036933391.csv',215,X'629692A80407F85AF620C83904AF4401','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/TransData.trans_TransData_3.16.1.1795886036933525.csv',227,X'3F435DF65EAA7B6A876A11D3F40CB623','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
INSERT INTO "files" VALUES('stats',1,'20261128171356/0/small_cnn/1/0/TransData.trans_TransData_4.18.1.1795886036933659.csv',216,X'2E76C64650A858516265ED0E209B691D','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8');
CREATE TABLE results (
    session TEXT NOT NULL REFERENCES sessions(name),
    name TEXT NOT NULL,
    PRIMARY KEY (session, name)
);
INSERT INTO "results" VALUES('stats','stats_result_20261128171357.csv');
CREATE TABLE rows (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL REFERENCES sessions(name),
    dump_file TEXT NOT NULL,  -- relative to the dump root, '' for golden-only rows
    shard_device TEXT NOT NULL,
    shard_model TEXT NOT NULL,
    shard_model_id TEXT NOT NULL,
    shard_step TEXT NOT NULL,
    shard_time TEXT NOT NULL,
    row_index INTEGER,
    op_sequence INTEGER,
    op_type TEXT NOT NULL,
    npu_name TEXT NOT NULL,
    npu_dtype TEXT NOT NULL,
    npu_address INTEGER,
    ground_truth TEXT NOT NULL,
    golden_dtype TEXT NOT NULL,
    golden_address INTEGER,
    tensor_index TEXT NOT NULL,
    shape TEXT,
    overflow INTEGER,
    dump_readable INTEGER NOT NULL,
    golden_key TEXT NOT NULL,
    compared INTEGER NOT NULL,
    cosine_similarity REAL,
    max_absolute_error REAL,
    accumulated_relative_error REAL,
    relative_euclidean_distance REAL,
    kullback_leibler_divergence REAL,
    mean_x REAL,
    std_x REAL,
    mean_y REAL,
    std_y REAL,
    mean_absolute_error REAL,
    root_mean_square_error REAL,
    max_relative_error REAL,
    mean_relative_error REAL,
    neg_zero INTEGER NOT NULL,
    spread_computed INTEGER NOT NULL,
    reasons TEXT NOT NULL,
    has_finite INTEGER NOT NULL,
    finite_cosine_similarity REAL,
    finite_max_absolute_error REAL,
    finite_accumulated_relative_error REAL,
    finite_relative_euclidean_distance REAL,
    finite_kullback_leibler_divergence REAL,
    finite_mean_x REAL,
    finite_std_x REAL,
    finite_mean_y REAL,
    finite_std_y REAL,
    finite_mean_absolute_error REAL,
    finite_root_mean_square_error REAL,
    finite_max_relative_error REAL,
    finite_mean_relative_error REAL,
    finite_neg_zero INTEGER NOT NULL,
    finite_spread_computed INTEGER NOT NULL,
    finite_reasons TEXT NOT NULL,
    special_target_nan INTEGER,
    special_target_inf INTEGER,
    special_golden_nan INTEGER,
    special_golden_inf INTEGER,
    special_mismatched INTEGER
);
CREATE TABLE runs (
    session TEXT NOT NULL REFERENCES sessions(name),
    run_id TEXT NOT NULL,
    state TEXT NOT NULL,           -- 'open', 'ended', 'replaced' or 'refused'
    agent TEXT NOT NULL DEFAULT '',  -- a START of an id without a slot replaces its agent's open runs
    PRIMARY KEY (session, run_id)
);
INSERT INTO "runs" VALUES('stats','small_cnn@dev0@20261128171356@fdeb6ad9207d4ba8','ended','aaf6214abe3d4a559b23e06f37f5764d');
CREATE TABLE sessions (
    name TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    settings BLOB NOT NULL,        -- a serialized dumpcmp.v1.CompareSettings
    state TEXT NOT NULL,           -- 'open' or 'closed'
    summary TEXT NOT NULL DEFAULT '',
    nothing_compared TEXT NOT NULL DEFAULT '',  -- the closed session's error line, or ''
    columns TEXT NOT NULL DEFAULT '[]',
    created REAL NOT NULL
);
INSERT INTO "sessions" VALUES('stats','small_cnn',X'18012A10667573696F6E5F72756C652E6A736F6E','closed','statistics result: /tmp/wtR/v4/data/sessions/stats/results/stats_result_20261128171357.csv
target tensors: 20, compared: 20 (20 by statistics), not compared: 0, unreadable dump files: 0, golden-only tensors: 11
statistics beyond threshold (|diff| / max(|NPU|, |golden|) > 0.5): 2
statistics move away from the golden''s first at step 0, index 8 Add /block2/Add (/block2/Add:output:0): L2 norm 9.64% apart, 96x the run''s noise before it (0.10%); ground truth /block2/Add
first statistics divergence: step 0, index 18 SoftmaxV2 /head/Softmax (/head/Softmax:output:0): Min differ by more than 0.5 of their size; ground truth /head/Softmax; dump file /tmp/wtR/v4/data/sessions/stats/dump/20261128171356/0/small_cnn/1/0/SoftmaxV2._head_Softmax.19.1.1795886036933749.csv','','[]',1.7958860368864324093e+09);
CREATE TABLE uploaders (
    session TEXT NOT NULL REFERENCES sessions(name),
    host TEXT NOT NULL, device INTEGER NOT NULL, agent_id TEXT NOT NULL, version TEXT NOT NULL,
    PRIMARY KEY (session, host, device, agent_id)
);
INSERT INTO "uploaders" VALUES('stats','vm',0,'aaf6214abe3d4a559b23e06f37f5764d','0.1.0');
CREATE INDEX rows_by_session ON rows (session, seq);
CREATE INDEX rows_by_file ON rows (session, dump_file);
DELETE FROM "sqlite_sequence";
COMMIT;
