BEGIN TRANSACTION;
CREATE TABLE files (
    session TEXT NOT NULL REFERENCES sessions(name),
    kind INTEGER NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, sha256 BLOB NOT NULL,
    run_id TEXT NOT NULL,
    PRIMARY KEY (session, kind, path)
);
INSERT INTO "files" VALUES('counts',2,'_block1_dw_act_Relu.0.1795896392183451.npy',4224,X'00F4290ED9FC1D9E6B1E8A275478E472','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block1_dw_bn_BatchNormalization.0.1795896392183020.npy',4224,X'3591B60CA4DF776ACAF0030B4F34A6F7','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block1_dw_conv_Conv.0.1795896392172888.npy',4224,X'2B9ACADA3B460130F532DE005DE71128','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block1_pw_act_Relu.0.1795896392184262.npy',6272,X'36B87DB23EA2739F7A8DAAD06C2AFFDF','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block1_pw_bn_BatchNormalization.0.1795896392183983.npy',6272,X'D7AA3E7190E75161CA662A5D4848E914','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block1_pw_conv_Conv.0.1795896392183719.npy',6272,X'9053479996D983D4D8EA31F18DF46BD0','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block2_Add.0.1795896392190043.npy',6272,X'B7CC2BB55842D006227CC2601904F105','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block2_act_Relu.0.1795896392190222.npy',6272,X'C4A9FB3AE69A6365ACAFC4681C37B907','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block2_gconv_act_Relu.0.1795896392185052.npy',6272,X'6E6DEF642BD8FD23A9B2C22A3AC2AE3C','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block2_gconv_bn_BatchNormalization.0.1795896392184791.npy',6272,X'D46ECE56AB33CC549EACBCEC85862B10','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block2_gconv_conv_Conv.0.1795896392184530.npy',6272,X'6C52C259616C6CBBEAB3AB61497904F6','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block2_pw_bn_BatchNormalization.0.1795896392189852.npy',6272,X'EE0BBAC32B62A097D3A34E718F18064E','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block2_pw_conv_Conv.0.1795896392189637.npy',6272,X'8BAD072B489F809C9CEF5846D08987CA','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block3_act_Relu.0.1795896392191034.npy',640,X'1D5FAF6D6672C6727EF92175B53433F5','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block3_bn_BatchNormalization.0.1795896392190775.npy',640,X'4703A35F0D9F13E71A2DB1FF778F9482','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block3_conv_Conv.0.1795896392190605.npy',640,X'E363CAB72BF3C269AECD78CBC7B32723','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_block3_pool_AveragePool.0.1795896392190436.npy',1664,X'02F56B8AFA6FE7409744C73E6E24FFDB','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_head_Flatten.0.1795896392191566.npy',256,X'E03268DCAC5F8AF8E1C6D4C7A312185E','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_head_GlobalAveragePool.0.1795896392191314.npy',256,X'6513AD3FC41ACF967154EB3033BACBFB','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_head_Softmax.0.1795896392192071.npy',168,X'F3956E5A4714360440DC29E5886E8F13','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_head_fc_Gemm.0.1795896392191826.npy',168,X'CE7A7936FB29DB7535BF8ECC797A2795','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_stem_act_Relu.0.1795896392163128.npy',16512,X'F50B1B6508ED59F1144739B073A7EF65','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_stem_bn_BatchNormalization.0.1795896392162833.npy',16512,X'12EDC06D6EB2642106C44C1A5E0976B6','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_stem_conv_Conv.0.1795896392162499.npy',16512,X'B9B0F7E64C3C9673C52BC29354A88705','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'_stem_pool_MaxPool.0.1795896392163439.npy',4224,X'39D0A9867AEC06260FAB97F66AE4A7C5','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',2,'input.0.1795896392161740.npy',3200,X'56CDC8A86EFDB2FD6DA7D33573748F6B','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',4,'0.input.npy',3200,X'56CDC8A86EFDB2FD6DA7D33573748F6B','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',3,'fusion_rule.json',113851,X'6144179261CB97D22C4789058B74D268','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/TransData.trans_TransData_1.2.1.1795896392330664.csv',189,X'6A1116CD6C9A81C5FB77359FC562B1F0','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/Conv2D._stem_conv_Conv_stem_act_Relu.3.1.1795896392331562.csv',284,X'5E17D1BE3A4372D59ADA08ED51FA314C','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/Add._block2_Add.9.1.1795896392407766.csv',246,X'5F8F151918072B660C352BF75EB72138','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/AvgPool._block3_pool_AveragePool.11.1.1795896392408264.csv',194,X'49D5ED86C67553782E0230811B839121','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/Cast.trans_Cast_0.1.1.1795896392329838.csv',180,X'96E90FCA05ACE21A2CB19EF72D456383','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/Cast.trans_Cast_5.20.1.1795896392426479.csv',162,X'47E14C686C84E23EECE56EED5F8C7D11','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/Conv2D._block1_pw_conv_Conv_block1_pw_act_Relu.6.1.1795896392332756.csv',279,X'5E57FB5F8ED5170E36EB0287079C0B4A','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/Conv2D._block2_gconv_conv_Conv_block2_gconv_act_Relu.7.1.1795896392406614.csv',282,X'CB27B53B9E312E35FCD0DA1BD333D6E5','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/Conv2D._block2_pw_conv_Conv.8.1.1795896392407300.csv',280,X'C1BC9A400795AA5B8A564EB1D1E25443','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/Conv2D._block3_conv_Conv_block3_act_Relu.12.1.1795896392408693.csv',282,X'2CDA541954184F7E7BDD18FC9625DD74','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/DepthwiseConv2D._block1_dw_conv_Conv_block1_dw_act_Relu.5.1.1795896392332401.csv',280,X'56D225700F4E9D44FA38075C01FB8AE6','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/Flatten._head_Flatten.15.1.1795896392409074.csv',170,X'961C8B6E0B55265852D1497B1C7A17E4','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/GlobalAveragePool._head_GlobalAveragePool.13.1.1795896392408980.csv',189,X'87C3B579F7F2B0E44465E772E82EC052','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/MatMulV2._head_fc_Gemm.17.1.1795896392409204.csv',283,X'6BBDA90B352B36F7A7E39A54244C7A3B','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/MaxPool._stem_pool_MaxPool.4.1.1795896392331945.csv',194,X'1D951373E1111B608F2C93B3A2308AD4','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/Relu._block2_act_Relu.10.1.1795896392407843.csv',196,X'4D85958C2EE37900590B97D2D87BE9C7','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/SoftmaxV2._head_Softmax.19.1.1795896392409318.csv',164,X'C3CCA427A519E47D3AC45B9DD303504C','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/TransData.trans_TransData_2.14.1.1795896392409013.csv',181,X'F42E8EB95D739C24866D62FA04474A18','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/TransData.trans_TransData_3.16.1.1795896392409095.csv',180,X'CE553D34039391AEDFE48DD179BC0C48','small_cnn@dev0@20261128200632@aa79fd433b294842');
INSERT INTO "files" VALUES('counts',1,'20261128200632/0/small_cnn/1/0/TransData.trans_TransData_4.18.1.1795896392409228.csv',179,X'7F6EC4E18C55D4342046C29E1160AEFD','small_cnn@dev0@20261128200632@aa79fd433b294842');
CREATE TABLE results (
    session TEXT NOT NULL REFERENCES sessions(name),
    name TEXT NOT NULL,
    PRIMARY KEY (session, name)
);
INSERT INTO "results" VALUES('counts','stats_result_20261128200632.csv');
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
INSERT INTO "runs" VALUES('counts','small_cnn@dev0@20261128200632@aa79fd433b294842','ended','0be0854d5385412badff17c397ac7c4f');
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
INSERT INTO "sessions" VALUES('counts','small_cnn',X'18012A10667573696F6E5F72756C652E6A736F6E','closed','statistics result: /tmp/f4/v5/data/sessions/counts/results/stats_result_20261128200632.csv
target tensors: 55, compared: 23 (23 by statistics), not compared: 32, unreadable dump files: 0, golden-only tensors: 11
not compared, by reason:
  18 × e.g. the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)
  14 × e.g. input 1: /stem/conv/Conv_fused_weight:output:0 has no framework counterpart (made by GE or fused away)
warning: only 23 of 55 target tensors were compared; the verdict below covers those only
nan/inf appeared: 23 tensors hold NaN/inf where the golden does not; the first: step 0, index 8 Add /block2/Add (/block2/Add:output:0)
statistics beyond threshold (|diff| / max(|NPU|, |golden|) > 0.5): 23
statistics move away from the golden''s first at step 0, index 8 Add /block2/Add (/block2/Add:output:0): NaN/inf on the target side only; ground truth /block2/Add
first statistics divergence: step 0, index 8 Add /block2/Add (/block2/Add:output:0): NaN/inf counted in the target beyond the golden''s; ground truth /block2/Add; dump file /tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Add._block2_Add.9.1.1795896392407766.csv
warning: it may start earlier: 8 outputs right before it could not be compared:
  index 7 Conv2D /block2.pw/conv/Conv (/block2.pw/conv/Conv:output:0): the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)
  index 6 Conv2D /block2.gconv/conv/Conv/block2.gconv/act/Relu (/block2.gconv/conv/Conv/block2.gconv/act/Relu:output:0): the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)
  index 5 Conv2D /block1.pw/conv/Conv/block1.pw/act/Relu (/block1.pw/conv/Conv/block1.pw/act/Relu:output:0): the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)
  … and 5 more','','[]',1.79589639224291634563e+09);
CREATE TABLE stats_rows (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL REFERENCES sessions(name),
    dump_file TEXT NOT NULL,  -- relative to the dump root, '' for golden-only rows
    shard_device TEXT NOT NULL,
    shard_model TEXT NOT NULL,
    shard_model_id TEXT NOT NULL,
    shard_step TEXT NOT NULL,
    shard_time TEXT NOT NULL,
    row_index INTEGER,
    op_type TEXT NOT NULL,
    npu_name TEXT NOT NULL,
    ground_truth TEXT NOT NULL,
    tensor_index TEXT NOT NULL,
    dump_path TEXT,
    data_type TEXT NOT NULL,
    format TEXT NOT NULL,
    shape TEXT,
    count INTEGER,
    has_target INTEGER NOT NULL,
    has_golden INTEGER NOT NULL,
    target_max REAL,
    target_min REAL,
    target_mean REAL,
    target_l2norm REAL,
    golden_max REAL,
    golden_min REAL,
    golden_mean REAL,
    golden_l2norm REAL,
    stat_nan INTEGER NOT NULL,
    stat_neg_zero INTEGER NOT NULL,
    reasons TEXT NOT NULL,
    dump_readable INTEGER NOT NULL,
    golden_key TEXT NOT NULL,
    target_nan_inf INTEGER NOT NULL
);
INSERT INTO "stats_rows" VALUES(56,'counts','20261128200632/0/small_cnn/1/0/Cast.trans_Cast_0.1.1.1795896392329838.csv','0','small_cnn','1','0','20261128200632',0,'Cast','trans_Cast_0','input','trans_Cast_0:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Cast.trans_Cast_0.1.1.1795896392329838.csv','DT_FLOAT','NCHW','[1, 3, 16, 16]',768,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'input.0',0);
INSERT INTO "stats_rows" VALUES(57,'counts','20261128200632/0/small_cnn/1/0/Cast.trans_Cast_0.1.1.1795896392329838.csv','0','small_cnn','1','0','20261128200632',0,'Cast','trans_Cast_0','input','trans_Cast_0:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Cast.trans_Cast_0.1.1.1795896392329838.csv','DT_FLOAT16','NCHW','[1, 3, 16, 16]',768,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'input.0',0);
INSERT INTO "stats_rows" VALUES(58,'counts','20261128200632/0/small_cnn/1/0/TransData.trans_TransData_1.2.1.1795896392330664.csv','0','small_cnn','1','0','20261128200632',1,'TransData','trans_TransData_1','input','trans_TransData_1:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/TransData.trans_TransData_1.2.1.1795896392330664.csv','DT_FLOAT16','NCHW','[1, 3, 16, 16]',768,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'input.0',0);
INSERT INTO "stats_rows" VALUES(59,'counts','20261128200632/0/small_cnn/1/0/TransData.trans_TransData_1.2.1.1795896392330664.csv','0','small_cnn','1','0','20261128200632',1,'TransData','trans_TransData_1','input','trans_TransData_1:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/TransData.trans_TransData_1.2.1.1795896392330664.csv','DT_FLOAT16','NC1HWC0','[1, 1, 16, 16, 16]',4096,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'input.0',0);
INSERT INTO "stats_rows" VALUES(60,'counts','20261128200632/0/small_cnn/1/0/Conv2D._stem_conv_Conv_stem_act_Relu.3.1.1795896392331562.csv','0','small_cnn','1','0','20261128200632',2,'Conv2D','/stem/conv/Conv/stem/act/Relu','/stem/conv/Conv,/stem/bn/BatchNormalization,/stem/act/Relu','/stem/conv/Conv/stem/act/Relu:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._stem_conv_Conv_stem_act_Relu.3.1.1795896392331562.csv','DT_FLOAT16','NC1HWC0','[1, 1, 16, 16, 16]',4096,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'input.0',0);
INSERT INTO "stats_rows" VALUES(61,'counts','20261128200632/0/small_cnn/1/0/Conv2D._stem_conv_Conv_stem_act_Relu.3.1.1795896392331562.csv','0','small_cnn','1','0','20261128200632',2,'Conv2D','/stem/conv/Conv/stem/act/Relu','/stem/conv/Conv,/stem/bn/BatchNormalization,/stem/act/Relu','/stem/conv/Conv/stem/act/Relu:input:1','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._stem_conv_Conv_stem_act_Relu.3.1.1795896392331562.csv','DT_FLOAT16','FRACTAL_Z','[9, 1, 16, 16]',2304,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 1: /stem/conv/Conv_fused_weight:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(62,'counts','20261128200632/0/small_cnn/1/0/Conv2D._stem_conv_Conv_stem_act_Relu.3.1.1795896392331562.csv','0','small_cnn','1','0','20261128200632',2,'Conv2D','/stem/conv/Conv/stem/act/Relu','/stem/conv/Conv,/stem/bn/BatchNormalization,/stem/act/Relu','/stem/conv/Conv/stem/act/Relu:input:2','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._stem_conv_Conv_stem_act_Relu.3.1.1795896392331562.csv','DT_FLOAT16','ND','[16]',16,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 2: /stem/conv/Conv_fused_bias:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(63,'counts','20261128200632/0/small_cnn/1/0/Conv2D._stem_conv_Conv_stem_act_Relu.3.1.1795896392331562.csv','0','small_cnn','1','0','20261128200632',2,'Conv2D','/stem/conv/Conv/stem/act/Relu','/stem/conv/Conv,/stem/bn/BatchNormalization,/stem/act/Relu','/stem/conv/Conv/stem/act/Relu:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._stem_conv_Conv_stem_act_Relu.3.1.1795896392331562.csv','DT_FLOAT16','NC1HWC0','[1, 1, 16, 16, 16]',4096,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'_stem_act_Relu.0',0);
INSERT INTO "stats_rows" VALUES(64,'counts','20261128200632/0/small_cnn/1/0/MaxPool._stem_pool_MaxPool.4.1.1795896392331945.csv','0','small_cnn','1','0','20261128200632',3,'MaxPool','/stem/pool/MaxPool','/stem/pool/MaxPool','/stem/pool/MaxPool:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/MaxPool._stem_pool_MaxPool.4.1.1795896392331945.csv','DT_FLOAT16','NC1HWC0','[1, 1, 16, 16, 16]',4096,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'_stem_act_Relu.0',0);
INSERT INTO "stats_rows" VALUES(65,'counts','20261128200632/0/small_cnn/1/0/MaxPool._stem_pool_MaxPool.4.1.1795896392331945.csv','0','small_cnn','1','0','20261128200632',3,'MaxPool','/stem/pool/MaxPool','/stem/pool/MaxPool','/stem/pool/MaxPool:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/MaxPool._stem_pool_MaxPool.4.1.1795896392331945.csv','DT_FLOAT16','NC1HWC0','[1, 1, 8, 8, 16]',1024,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'_stem_pool_MaxPool.0',0);
INSERT INTO "stats_rows" VALUES(66,'counts','20261128200632/0/small_cnn/1/0/DepthwiseConv2D._block1_dw_conv_Conv_block1_dw_act_Relu.5.1.1795896392332401.csv','0','small_cnn','1','0','20261128200632',4,'DepthwiseConv2D','/block1.dw/conv/Conv/block1.dw/act/Relu','/block1.dw/conv/Conv,/block1.dw/bn/BatchNormalization,/block1.dw/act/Relu','/block1.dw/conv/Conv/block1.dw/act/Relu:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/DepthwiseConv2D._block1_dw_conv_Conv_block1_dw_act_Relu.5.1.1795896392332401.csv','DT_FLOAT16','NC1HWC0','[1, 1, 8, 8, 16]',1024,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'_stem_pool_MaxPool.0',0);
INSERT INTO "stats_rows" VALUES(67,'counts','20261128200632/0/small_cnn/1/0/DepthwiseConv2D._block1_dw_conv_Conv_block1_dw_act_Relu.5.1.1795896392332401.csv','0','small_cnn','1','0','20261128200632',4,'DepthwiseConv2D','/block1.dw/conv/Conv/block1.dw/act/Relu','/block1.dw/conv/Conv,/block1.dw/bn/BatchNormalization,/block1.dw/act/Relu','/block1.dw/conv/Conv/block1.dw/act/Relu:input:1','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/DepthwiseConv2D._block1_dw_conv_Conv_block1_dw_act_Relu.5.1.1795896392332401.csv','DT_FLOAT16','FRACTAL_Z','[9, 1, 16, 16]',2304,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 1: /block1.dw/conv/Conv_fused_weight:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(68,'counts','20261128200632/0/small_cnn/1/0/DepthwiseConv2D._block1_dw_conv_Conv_block1_dw_act_Relu.5.1.1795896392332401.csv','0','small_cnn','1','0','20261128200632',4,'DepthwiseConv2D','/block1.dw/conv/Conv/block1.dw/act/Relu','/block1.dw/conv/Conv,/block1.dw/bn/BatchNormalization,/block1.dw/act/Relu','/block1.dw/conv/Conv/block1.dw/act/Relu:input:2','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/DepthwiseConv2D._block1_dw_conv_Conv_block1_dw_act_Relu.5.1.1795896392332401.csv','DT_FLOAT16','ND','[16]',16,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 2: /block1.dw/conv/Conv_fused_bias:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(69,'counts','20261128200632/0/small_cnn/1/0/DepthwiseConv2D._block1_dw_conv_Conv_block1_dw_act_Relu.5.1.1795896392332401.csv','0','small_cnn','1','0','20261128200632',4,'DepthwiseConv2D','/block1.dw/conv/Conv/block1.dw/act/Relu','/block1.dw/conv/Conv,/block1.dw/bn/BatchNormalization,/block1.dw/act/Relu','/block1.dw/conv/Conv/block1.dw/act/Relu:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/DepthwiseConv2D._block1_dw_conv_Conv_block1_dw_act_Relu.5.1.1795896392332401.csv','DT_FLOAT16','NC1HWC0','[1, 1, 8, 8, 16]',1024,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'_block1_dw_act_Relu.0',0);
INSERT INTO "stats_rows" VALUES(70,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block1_pw_conv_Conv_block1_pw_act_Relu.6.1.1795896392332756.csv','0','small_cnn','1','0','20261128200632',5,'Conv2D','/block1.pw/conv/Conv/block1.pw/act/Relu','/block1.pw/conv/Conv,/block1.pw/bn/BatchNormalization,/block1.pw/act/Relu','/block1.pw/conv/Conv/block1.pw/act/Relu:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block1_pw_conv_Conv_block1_pw_act_Relu.6.1.1795896392332756.csv','DT_FLOAT16','NC1HWC0','[1, 1, 8, 8, 16]',1024,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'_block1_dw_act_Relu.0',0);
INSERT INTO "stats_rows" VALUES(71,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block1_pw_conv_Conv_block1_pw_act_Relu.6.1.1795896392332756.csv','0','small_cnn','1','0','20261128200632',5,'Conv2D','/block1.pw/conv/Conv/block1.pw/act/Relu','/block1.pw/conv/Conv,/block1.pw/bn/BatchNormalization,/block1.pw/act/Relu','/block1.pw/conv/Conv/block1.pw/act/Relu:input:1','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block1_pw_conv_Conv_block1_pw_act_Relu.6.1.1795896392332756.csv','DT_FLOAT16','FRACTAL_Z','[1, 2, 16, 16]',512,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 1: /block1.pw/conv/Conv_fused_weight:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(72,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block1_pw_conv_Conv_block1_pw_act_Relu.6.1.1795896392332756.csv','0','small_cnn','1','0','20261128200632',5,'Conv2D','/block1.pw/conv/Conv/block1.pw/act/Relu','/block1.pw/conv/Conv,/block1.pw/bn/BatchNormalization,/block1.pw/act/Relu','/block1.pw/conv/Conv/block1.pw/act/Relu:input:2','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block1_pw_conv_Conv_block1_pw_act_Relu.6.1.1795896392332756.csv','DT_FLOAT16','ND','[24]',24,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 2: /block1.pw/conv/Conv_fused_bias:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(73,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block1_pw_conv_Conv_block1_pw_act_Relu.6.1.1795896392332756.csv','0','small_cnn','1','0','20261128200632',5,'Conv2D','/block1.pw/conv/Conv/block1.pw/act/Relu','/block1.pw/conv/Conv,/block1.pw/bn/BatchNormalization,/block1.pw/act/Relu','/block1.pw/conv/Conv/block1.pw/act/Relu:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block1_pw_conv_Conv_block1_pw_act_Relu.6.1.1795896392332756.csv','DT_FLOAT16','NC1HWC0','[1, 2, 8, 8, 16]',2048,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'_block1_pw_act_Relu.0',0);
INSERT INTO "stats_rows" VALUES(74,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block2_gconv_conv_Conv_block2_gconv_act_Relu.7.1.1795896392406614.csv','0','small_cnn','1','0','20261128200632',6,'Conv2D','/block2.gconv/conv/Conv/block2.gconv/act/Relu','/block2.gconv/conv/Conv,/block2.gconv/bn/BatchNormalization,/block2.gconv/act/Relu','/block2.gconv/conv/Conv/block2.gconv/act/Relu:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block2_gconv_conv_Conv_block2_gconv_act_Relu.7.1.1795896392406614.csv','DT_FLOAT16','NC1HWC0','[1, 2, 8, 8, 16]',2048,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'_block1_pw_act_Relu.0',0);
INSERT INTO "stats_rows" VALUES(75,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block2_gconv_conv_Conv_block2_gconv_act_Relu.7.1.1795896392406614.csv','0','small_cnn','1','0','20261128200632',6,'Conv2D','/block2.gconv/conv/Conv/block2.gconv/act/Relu','/block2.gconv/conv/Conv,/block2.gconv/bn/BatchNormalization,/block2.gconv/act/Relu','/block2.gconv/conv/Conv/block2.gconv/act/Relu:input:1','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block2_gconv_conv_Conv_block2_gconv_act_Relu.7.1.1795896392406614.csv','DT_FLOAT16','FRACTAL_Z','[18, 2, 16, 16]',9216,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 1: /block2.gconv/conv/Conv_fused_weight:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(76,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block2_gconv_conv_Conv_block2_gconv_act_Relu.7.1.1795896392406614.csv','0','small_cnn','1','0','20261128200632',6,'Conv2D','/block2.gconv/conv/Conv/block2.gconv/act/Relu','/block2.gconv/conv/Conv,/block2.gconv/bn/BatchNormalization,/block2.gconv/act/Relu','/block2.gconv/conv/Conv/block2.gconv/act/Relu:input:2','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block2_gconv_conv_Conv_block2_gconv_act_Relu.7.1.1795896392406614.csv','DT_FLOAT16','ND','[24]',24,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 2: /block2.gconv/conv/Conv_fused_bias:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(77,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block2_gconv_conv_Conv_block2_gconv_act_Relu.7.1.1795896392406614.csv','0','small_cnn','1','0','20261128200632',6,'Conv2D','/block2.gconv/conv/Conv/block2.gconv/act/Relu','/block2.gconv/conv/Conv,/block2.gconv/bn/BatchNormalization,/block2.gconv/act/Relu','/block2.gconv/conv/Conv/block2.gconv/act/Relu:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block2_gconv_conv_Conv_block2_gconv_act_Relu.7.1.1795896392406614.csv','DT_FLOAT16','NC1HWC0','[1, 2, 8, 8, 16]',2048,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'_block2_gconv_act_Relu.0',0);
INSERT INTO "stats_rows" VALUES(78,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block2_pw_conv_Conv.8.1.1795896392407300.csv','0','small_cnn','1','0','20261128200632',7,'Conv2D','/block2.pw/conv/Conv','/block2.pw/conv/Conv,/block2.pw/bn/BatchNormalization','/block2.pw/conv/Conv:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block2_pw_conv_Conv.8.1.1795896392407300.csv','DT_FLOAT16','NC1HWC0','[1, 2, 8, 8, 16]',2048,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'_block2_gconv_act_Relu.0',0);
INSERT INTO "stats_rows" VALUES(79,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block2_pw_conv_Conv.8.1.1795896392407300.csv','0','small_cnn','1','0','20261128200632',7,'Conv2D','/block2.pw/conv/Conv','/block2.pw/conv/Conv,/block2.pw/bn/BatchNormalization','/block2.pw/conv/Conv:input:1','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block2_pw_conv_Conv.8.1.1795896392407300.csv','DT_FLOAT16','FRACTAL_Z','[2, 2, 16, 16]',1024,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 1: /block2.pw/conv/Conv_fused_weight:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(80,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block2_pw_conv_Conv.8.1.1795896392407300.csv','0','small_cnn','1','0','20261128200632',7,'Conv2D','/block2.pw/conv/Conv','/block2.pw/conv/Conv,/block2.pw/bn/BatchNormalization','/block2.pw/conv/Conv:input:2','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block2_pw_conv_Conv.8.1.1795896392407300.csv','DT_FLOAT16','ND','[24]',24,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 2: /block2.pw/conv/Conv_fused_bias:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(81,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block2_pw_conv_Conv.8.1.1795896392407300.csv','0','small_cnn','1','0','20261128200632',7,'Conv2D','/block2.pw/conv/Conv','/block2.pw/conv/Conv,/block2.pw/bn/BatchNormalization','/block2.pw/conv/Conv:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block2_pw_conv_Conv.8.1.1795896392407300.csv','DT_FLOAT16','NC1HWC0','[1, 2, 8, 8, 16]',2048,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'_block2_pw_bn_BatchNormalization.0',0);
INSERT INTO "stats_rows" VALUES(82,'counts','20261128200632/0/small_cnn/1/0/Add._block2_Add.9.1.1795896392407766.csv','0','small_cnn','1','0','20261128200632',8,'Add','/block2/Add','/block2/Add','/block2/Add:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Add._block2_Add.9.1.1795896392407766.csv','DT_FLOAT16','NC1HWC0','[1, 2, 8, 8, 16]',2048,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'_block2_pw_bn_BatchNormalization.0',0);
INSERT INTO "stats_rows" VALUES(83,'counts','20261128200632/0/small_cnn/1/0/Add._block2_Add.9.1.1795896392407766.csv','0','small_cnn','1','0','20261128200632',8,'Add','/block2/Add','/block2/Add','/block2/Add:input:1','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Add._block2_Add.9.1.1795896392407766.csv','DT_FLOAT16','NC1HWC0','[1, 2, 8, 8, 16]',2048,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["the stats dump holds no comparable statistic (add Max, Min, Avg or L2norm to dump_stats)"]',1,'_block1_pw_act_Relu.0',0);
INSERT INTO "stats_rows" VALUES(84,'counts','20261128200632/0/small_cnn/1/0/Add._block2_Add.9.1.1795896392407766.csv','0','small_cnn','1','0','20261128200632',8,'Add','/block2/Add','/block2/Add','/block2/Add:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Add._block2_Add.9.1.1795896392407766.csv','DT_FLOAT16','NC1HWC0','[1, 2, 8, 8, 16]',2048,1,1,NULL,NULL,NULL,NULL,1.22932510375976562495e+01,-5.7709197998046875e+00,6.4622996976595459273e-01,8.69860244626067071783e+01,0,0,'["target holds 101 Positive Inf"]',1,'_block2_Add.0',101);
INSERT INTO "stats_rows" VALUES(85,'counts','20261128200632/0/small_cnn/1/0/Relu._block2_act_Relu.10.1.1795896392407843.csv','0','small_cnn','1','0','20261128200632',9,'Relu','/block2/act/Relu','/block2/act/Relu','/block2/act/Relu:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Relu._block2_act_Relu.10.1.1795896392407843.csv','DT_FLOAT16','NC1HWC0','[1, 2, 8, 8, 16]',2048,1,1,NULL,NULL,NULL,NULL,1.22932510375976562495e+01,-5.7709197998046875e+00,6.4622996976595459273e-01,8.69860244626067071783e+01,0,0,'["target holds 101 Positive Inf"]',1,'_block2_Add.0',101);
INSERT INTO "stats_rows" VALUES(86,'counts','20261128200632/0/small_cnn/1/0/Relu._block2_act_Relu.10.1.1795896392407843.csv','0','small_cnn','1','0','20261128200632',9,'Relu','/block2/act/Relu','/block2/act/Relu','/block2/act/Relu:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Relu._block2_act_Relu.10.1.1795896392407843.csv','DT_FLOAT16','NC1HWC0','[1, 2, 8, 8, 16]',2048,1,1,NULL,NULL,NULL,NULL,1.22932510375976562495e+01,0.0,9.36361474524346704129e-01,7.94421976187397547173e+01,0,0,'["target holds 101 Positive Inf"]',1,'_block2_act_Relu.0',101);
INSERT INTO "stats_rows" VALUES(87,'counts','20261128200632/0/small_cnn/1/0/AvgPool._block3_pool_AveragePool.11.1.1795896392408264.csv','0','small_cnn','1','0','20261128200632',10,'AvgPool','/block3/pool/AveragePool','/block3/pool/AveragePool','/block3/pool/AveragePool:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/AvgPool._block3_pool_AveragePool.11.1.1795896392408264.csv','DT_FLOAT16','NC1HWC0','[1, 2, 8, 8, 16]',2048,1,1,NULL,NULL,NULL,NULL,1.22932510375976562495e+01,0.0,9.36361474524346704129e-01,7.94421976187397547173e+01,0,0,'["target holds 101 Positive Inf"]',1,'_block2_act_Relu.0',101);
INSERT INTO "stats_rows" VALUES(88,'counts','20261128200632/0/small_cnn/1/0/AvgPool._block3_pool_AveragePool.11.1.1795896392408264.csv','0','small_cnn','1','0','20261128200632',10,'AvgPool','/block3/pool/AveragePool','/block3/pool/AveragePool','/block3/pool/AveragePool:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/AvgPool._block3_pool_AveragePool.11.1.1795896392408264.csv','DT_FLOAT16','NC1HWC0','[1, 2, 4, 4, 16]',512,1,1,NULL,NULL,NULL,NULL,8.6809864044189453125e+00,0.0,9.36361477601167280226e-01,3.62741081409926451333e+01,0,0,'["target holds 90 Positive Inf"]',1,'_block3_pool_AveragePool.0',90);
INSERT INTO "stats_rows" VALUES(89,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block3_conv_Conv_block3_act_Relu.12.1.1795896392408693.csv','0','small_cnn','1','0','20261128200632',11,'Conv2D','/block3/conv/Conv/block3/act/Relu','/block3/conv/Conv,/block3/bn/BatchNormalization,/block3/act/Relu','/block3/conv/Conv/block3/act/Relu:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block3_conv_Conv_block3_act_Relu.12.1.1795896392408693.csv','DT_FLOAT16','NC1HWC0','[1, 2, 4, 4, 16]',512,1,1,NULL,NULL,NULL,NULL,8.6809864044189453125e+00,0.0,9.36361477601167280226e-01,3.62741081409926451333e+01,0,0,'["target holds 90 Positive Inf"]',1,'_block3_pool_AveragePool.0',90);
INSERT INTO "stats_rows" VALUES(90,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block3_conv_Conv_block3_act_Relu.12.1.1795896392408693.csv','0','small_cnn','1','0','20261128200632',11,'Conv2D','/block3/conv/Conv/block3/act/Relu','/block3/conv/Conv,/block3/bn/BatchNormalization,/block3/act/Relu','/block3/conv/Conv/block3/act/Relu:input:1','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block3_conv_Conv_block3_act_Relu.12.1.1795896392408693.csv','DT_FLOAT16','FRACTAL_Z','[18, 2, 16, 16]',9216,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 1: /block3/conv/Conv_fused_weight:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(91,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block3_conv_Conv_block3_act_Relu.12.1.1795896392408693.csv','0','small_cnn','1','0','20261128200632',11,'Conv2D','/block3/conv/Conv/block3/act/Relu','/block3/conv/Conv,/block3/bn/BatchNormalization,/block3/act/Relu','/block3/conv/Conv/block3/act/Relu:input:2','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block3_conv_Conv_block3_act_Relu.12.1.1795896392408693.csv','DT_FLOAT16','ND','[32]',32,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 2: /block3/conv/Conv_fused_bias:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(92,'counts','20261128200632/0/small_cnn/1/0/Conv2D._block3_conv_Conv_block3_act_Relu.12.1.1795896392408693.csv','0','small_cnn','1','0','20261128200632',11,'Conv2D','/block3/conv/Conv/block3/act/Relu','/block3/conv/Conv,/block3/bn/BatchNormalization,/block3/act/Relu','/block3/conv/Conv/block3/act/Relu:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Conv2D._block3_conv_Conv_block3_act_Relu.12.1.1795896392408693.csv','DT_FLOAT16','NC1HWC0','[1, 2, 2, 2, 16]',128,1,1,NULL,NULL,NULL,NULL,9.75345516204834,0.0,1.11169682815670967102e+00,2.26767511750385821747e+01,0,0,'["target holds 128 Nan"]',1,'_block3_act_Relu.0',128);
INSERT INTO "stats_rows" VALUES(93,'counts','20261128200632/0/small_cnn/1/0/GlobalAveragePool._head_GlobalAveragePool.13.1.1795896392408980.csv','0','small_cnn','1','0','20261128200632',12,'GlobalAveragePool','/head/GlobalAveragePool','/head/GlobalAveragePool','/head/GlobalAveragePool:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/GlobalAveragePool._head_GlobalAveragePool.13.1.1795896392408980.csv','DT_FLOAT16','NC1HWC0','[1, 2, 2, 2, 16]',128,1,1,NULL,NULL,NULL,NULL,9.75345516204834,0.0,1.11169682815670967102e+00,2.26767511750385821747e+01,0,0,'["target holds 128 Nan"]',1,'_block3_act_Relu.0',128);
INSERT INTO "stats_rows" VALUES(94,'counts','20261128200632/0/small_cnn/1/0/GlobalAveragePool._head_GlobalAveragePool.13.1.1795896392408980.csv','0','small_cnn','1','0','20261128200632',12,'GlobalAveragePool','/head/GlobalAveragePool','/head/GlobalAveragePool','/head/GlobalAveragePool:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/GlobalAveragePool._head_GlobalAveragePool.13.1.1795896392408980.csv','DT_FLOAT16','NC1HWC0','[1, 2, 1, 1, 16]',32,1,1,NULL,NULL,NULL,NULL,5.08867645263671875e+00,0.0,1.11169682181207463145e+00,9.56838094763156732369e+00,0,0,'["target holds 32 Nan"]',1,'_head_GlobalAveragePool.0',32);
INSERT INTO "stats_rows" VALUES(95,'counts','20261128200632/0/small_cnn/1/0/TransData.trans_TransData_2.14.1.1795896392409013.csv','0','small_cnn','1','0','20261128200632',13,'TransData','trans_TransData_2','/head/GlobalAveragePool','trans_TransData_2:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/TransData.trans_TransData_2.14.1.1795896392409013.csv','DT_FLOAT16','NC1HWC0','[1, 2, 1, 1, 16]',32,1,1,NULL,NULL,NULL,NULL,5.08867645263671875e+00,0.0,1.11169682181207463145e+00,9.56838094763156732369e+00,0,0,'["target holds 32 Nan"]',1,'_head_GlobalAveragePool.0',32);
INSERT INTO "stats_rows" VALUES(96,'counts','20261128200632/0/small_cnn/1/0/TransData.trans_TransData_2.14.1.1795896392409013.csv','0','small_cnn','1','0','20261128200632',13,'TransData','trans_TransData_2','/head/GlobalAveragePool','trans_TransData_2:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/TransData.trans_TransData_2.14.1.1795896392409013.csv','DT_FLOAT16','NCHW','[1, 32, 1, 1]',32,1,1,NULL,NULL,NULL,NULL,5.08867645263671875e+00,0.0,1.11169682181207463145e+00,9.56838094763156732369e+00,0,0,'["target holds 32 Nan"]',1,'_head_GlobalAveragePool.0',32);
INSERT INTO "stats_rows" VALUES(97,'counts','20261128200632/0/small_cnn/1/0/Flatten._head_Flatten.15.1.1795896392409074.csv','0','small_cnn','1','0','20261128200632',14,'Flatten','/head/Flatten','/head/Flatten','/head/Flatten:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Flatten._head_Flatten.15.1.1795896392409074.csv','DT_FLOAT16','NCHW','[1, 32, 1, 1]',32,1,1,NULL,NULL,NULL,NULL,5.08867645263671875e+00,0.0,1.11169682181207463145e+00,9.56838094763156732369e+00,0,0,'["target holds 32 Nan"]',1,'_head_GlobalAveragePool.0',32);
INSERT INTO "stats_rows" VALUES(98,'counts','20261128200632/0/small_cnn/1/0/Flatten._head_Flatten.15.1.1795896392409074.csv','0','small_cnn','1','0','20261128200632',14,'Flatten','/head/Flatten','/head/Flatten','/head/Flatten:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Flatten._head_Flatten.15.1.1795896392409074.csv','DT_FLOAT16','ND','[1, 32]',32,1,1,NULL,NULL,NULL,NULL,5.08867645263671875e+00,0.0,1.11169682181207463145e+00,9.56838094763156732369e+00,0,0,'["target holds 32 Nan"]',1,'_head_Flatten.0',32);
INSERT INTO "stats_rows" VALUES(99,'counts','20261128200632/0/small_cnn/1/0/TransData.trans_TransData_3.16.1.1795896392409095.csv','0','small_cnn','1','0','20261128200632',15,'TransData','trans_TransData_3','/head/Flatten','trans_TransData_3:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/TransData.trans_TransData_3.16.1.1795896392409095.csv','DT_FLOAT16','ND','[1, 32]',32,1,1,NULL,NULL,NULL,NULL,5.08867645263671875e+00,0.0,1.11169682181207463145e+00,9.56838094763156732369e+00,0,0,'["target holds 32 Nan"]',1,'_head_Flatten.0',32);
INSERT INTO "stats_rows" VALUES(100,'counts','20261128200632/0/small_cnn/1/0/TransData.trans_TransData_3.16.1.1795896392409095.csv','0','small_cnn','1','0','20261128200632',15,'TransData','trans_TransData_3','/head/Flatten','trans_TransData_3:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/TransData.trans_TransData_3.16.1.1795896392409095.csv','DT_FLOAT16','FRACTAL_NZ','[2, 1, 16, 16]',512,1,1,NULL,NULL,NULL,NULL,5.08867645263671875e+00,0.0,6.94810513632546644657e-02,9.56838094763156732369e+00,0,0,'["target holds 32 Nan"]',1,'_head_Flatten.0',32);
INSERT INTO "stats_rows" VALUES(101,'counts','20261128200632/0/small_cnn/1/0/MatMulV2._head_fc_Gemm.17.1.1795896392409204.csv','0','small_cnn','1','0','20261128200632',16,'MatMulV2','/head/fc/Gemm','/head/fc/Gemm','/head/fc/Gemm:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/MatMulV2._head_fc_Gemm.17.1.1795896392409204.csv','DT_FLOAT16','FRACTAL_NZ','[2, 1, 16, 16]',512,1,1,NULL,NULL,NULL,NULL,5.08867645263671875e+00,0.0,6.94810513632546644657e-02,9.56838094763156732369e+00,0,0,'["target holds 32 Nan"]',1,'_head_Flatten.0',32);
INSERT INTO "stats_rows" VALUES(102,'counts','20261128200632/0/small_cnn/1/0/MatMulV2._head_fc_Gemm.17.1.1795896392409204.csv','0','small_cnn','1','0','20261128200632',16,'MatMulV2','/head/fc/Gemm','/head/fc/Gemm','/head/fc/Gemm:input:1','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/MatMulV2._head_fc_Gemm.17.1.1795896392409204.csv','DT_FLOAT16','FRACTAL_NZ','[2, 1, 16, 16]',512,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 1: head.fc.weight:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(103,'counts','20261128200632/0/small_cnn/1/0/MatMulV2._head_fc_Gemm.17.1.1795896392409204.csv','0','small_cnn','1','0','20261128200632',16,'MatMulV2','/head/fc/Gemm','/head/fc/Gemm','/head/fc/Gemm:input:2','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/MatMulV2._head_fc_Gemm.17.1.1795896392409204.csv','DT_FLOAT16','ND','[10]',10,1,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["input 2: head.fc.bias:output:0 has no framework counterpart (made by GE or fused away)"]',1,'',0);
INSERT INTO "stats_rows" VALUES(104,'counts','20261128200632/0/small_cnn/1/0/MatMulV2._head_fc_Gemm.17.1.1795896392409204.csv','0','small_cnn','1','0','20261128200632',16,'MatMulV2','/head/fc/Gemm','/head/fc/Gemm','/head/fc/Gemm:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/MatMulV2._head_fc_Gemm.17.1.1795896392409204.csv','DT_FLOAT16','FRACTAL_NZ','[1, 1, 16, 16]',256,1,1,NULL,NULL,NULL,NULL,3.57795596122741699218e+00,-2.46346163749694824218e+00,1.37150793307228013873e-03,5.47050268461103,0,0,'["target holds 10 Nan"]',1,'_head_fc_Gemm.0',10);
INSERT INTO "stats_rows" VALUES(105,'counts','20261128200632/0/small_cnn/1/0/TransData.trans_TransData_4.18.1.1795896392409228.csv','0','small_cnn','1','0','20261128200632',17,'TransData','trans_TransData_4','/head/fc/Gemm','trans_TransData_4:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/TransData.trans_TransData_4.18.1.1795896392409228.csv','DT_FLOAT16','FRACTAL_NZ','[1, 1, 16, 16]',256,1,1,NULL,NULL,NULL,NULL,3.57795596122741699218e+00,-2.46346163749694824218e+00,1.37150793307228013873e-03,5.47050268461103,0,0,'["target holds 10 Nan"]',1,'_head_fc_Gemm.0',10);
INSERT INTO "stats_rows" VALUES(106,'counts','20261128200632/0/small_cnn/1/0/TransData.trans_TransData_4.18.1.1795896392409228.csv','0','small_cnn','1','0','20261128200632',17,'TransData','trans_TransData_4','/head/fc/Gemm','trans_TransData_4:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/TransData.trans_TransData_4.18.1.1795896392409228.csv','DT_FLOAT16','ND','[1, 10]',10,1,1,NULL,NULL,NULL,NULL,3.57795596122741699218e+00,-2.46346163749694824218e+00,3.51106030866503715515e-02,5.47050268461103,0,0,'["target holds 10 Nan"]',1,'_head_fc_Gemm.0',10);
INSERT INTO "stats_rows" VALUES(107,'counts','20261128200632/0/small_cnn/1/0/SoftmaxV2._head_Softmax.19.1.1795896392409318.csv','0','small_cnn','1','0','20261128200632',18,'SoftmaxV2','/head/Softmax','/head/Softmax','/head/Softmax:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/SoftmaxV2._head_Softmax.19.1.1795896392409318.csv','DT_FLOAT16','ND','[1, 10]',10,1,1,NULL,NULL,NULL,NULL,3.57795596122741699218e+00,-2.46346163749694824218e+00,3.51106030866503715515e-02,5.47050268461103,0,0,'["target holds 10 Nan"]',1,'_head_fc_Gemm.0',10);
INSERT INTO "stats_rows" VALUES(108,'counts','20261128200632/0/small_cnn/1/0/SoftmaxV2._head_Softmax.19.1.1795896392409318.csv','0','small_cnn','1','0','20261128200632',18,'SoftmaxV2','/head/Softmax','/head/Softmax','/head/Softmax:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/SoftmaxV2._head_Softmax.19.1.1795896392409318.csv','DT_FLOAT16','ND','[1, 10]',10,1,1,NULL,NULL,NULL,NULL,7.35517859458923339843e-01,1.74919771961867809295e-03,9.99999971361830858329e-02,7.47527343200421356961e-01,0,0,'["target holds 10 Nan"]',1,'_head_Softmax.0',10);
INSERT INTO "stats_rows" VALUES(109,'counts','20261128200632/0/small_cnn/1/0/Cast.trans_Cast_5.20.1.1795896392426479.csv','0','small_cnn','1','0','20261128200632',19,'Cast','trans_Cast_5','/head/Softmax','trans_Cast_5:input:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Cast.trans_Cast_5.20.1.1795896392426479.csv','DT_FLOAT16','ND','[1, 10]',10,1,1,NULL,NULL,NULL,NULL,7.35517859458923339843e-01,1.74919771961867809295e-03,9.99999971361830858329e-02,7.47527343200421356961e-01,0,0,'["target holds 10 Nan"]',1,'_head_Softmax.0',10);
INSERT INTO "stats_rows" VALUES(110,'counts','20261128200632/0/small_cnn/1/0/Cast.trans_Cast_5.20.1.1795896392426479.csv','0','small_cnn','1','0','20261128200632',19,'Cast','trans_Cast_5','/head/Softmax','trans_Cast_5:output:0','/tmp/f4/v5/data/sessions/counts/dump/20261128200632/0/small_cnn/1/0/Cast.trans_Cast_5.20.1.1795896392426479.csv','DT_FLOAT','ND','[1, 10]',10,1,1,NULL,NULL,NULL,NULL,7.35517859458923339843e-01,1.74919771961867809295e-03,9.99999971361830858329e-02,7.47527343200421356961e-01,0,0,'["target holds 10 Nan"]',1,'_head_Softmax.0',10);
INSERT INTO "stats_rows" VALUES(111,'counts','','0','small_cnn','1','0','20261128200632',NULL,'','*','_block1_dw_bn_BatchNormalization.0','*',NULL,'','',NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["golden tensor with no NPU counterpart"]',1,'',0);
INSERT INTO "stats_rows" VALUES(112,'counts','','0','small_cnn','1','0','20261128200632',NULL,'','*','_block1_dw_conv_Conv.0','*',NULL,'','',NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["golden tensor with no NPU counterpart"]',1,'',0);
INSERT INTO "stats_rows" VALUES(113,'counts','','0','small_cnn','1','0','20261128200632',NULL,'','*','_block1_pw_bn_BatchNormalization.0','*',NULL,'','',NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["golden tensor with no NPU counterpart"]',1,'',0);
INSERT INTO "stats_rows" VALUES(114,'counts','','0','small_cnn','1','0','20261128200632',NULL,'','*','_block1_pw_conv_Conv.0','*',NULL,'','',NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["golden tensor with no NPU counterpart"]',1,'',0);
INSERT INTO "stats_rows" VALUES(115,'counts','','0','small_cnn','1','0','20261128200632',NULL,'','*','_block2_gconv_bn_BatchNormalization.0','*',NULL,'','',NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["golden tensor with no NPU counterpart"]',1,'',0);
INSERT INTO "stats_rows" VALUES(116,'counts','','0','small_cnn','1','0','20261128200632',NULL,'','*','_block2_gconv_conv_Conv.0','*',NULL,'','',NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["golden tensor with no NPU counterpart"]',1,'',0);
INSERT INTO "stats_rows" VALUES(117,'counts','','0','small_cnn','1','0','20261128200632',NULL,'','*','_block2_pw_conv_Conv.0','*',NULL,'','',NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["golden tensor with no NPU counterpart"]',1,'',0);
INSERT INTO "stats_rows" VALUES(118,'counts','','0','small_cnn','1','0','20261128200632',NULL,'','*','_block3_bn_BatchNormalization.0','*',NULL,'','',NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["golden tensor with no NPU counterpart"]',1,'',0);
INSERT INTO "stats_rows" VALUES(119,'counts','','0','small_cnn','1','0','20261128200632',NULL,'','*','_block3_conv_Conv.0','*',NULL,'','',NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["golden tensor with no NPU counterpart"]',1,'',0);
INSERT INTO "stats_rows" VALUES(120,'counts','','0','small_cnn','1','0','20261128200632',NULL,'','*','_stem_bn_BatchNormalization.0','*',NULL,'','',NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["golden tensor with no NPU counterpart"]',1,'',0);
INSERT INTO "stats_rows" VALUES(121,'counts','','0','small_cnn','1','0','20261128200632',NULL,'','*','_stem_conv_Conv.0','*',NULL,'','',NULL,NULL,0,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0,'["golden tensor with no NPU counterpart"]',1,'',0);
CREATE TABLE uploaders (
    session TEXT NOT NULL REFERENCES sessions(name),
    host TEXT NOT NULL, device INTEGER NOT NULL, agent_id TEXT NOT NULL, version TEXT NOT NULL,
    PRIMARY KEY (session, host, device, agent_id)
);
INSERT INTO "uploaders" VALUES('counts','vm',0,'0be0854d5385412badff17c397ac7c4f','0.1.0');
CREATE INDEX rows_by_session ON rows (session, seq);
CREATE INDEX rows_by_file ON rows (session, dump_file);
CREATE INDEX stats_rows_by_session ON stats_rows (session, seq);
CREATE INDEX stats_rows_by_file ON stats_rows (session, dump_file);
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('stats_rows',121);
COMMIT;
