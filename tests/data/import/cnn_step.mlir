module @jit_cnn_step attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x3x1x4xf32> {tf.aliasing_output = 1 : i32}, %arg1: tensor<4xf32> {tf.aliasing_output = 2 : i32}, %arg2: tensor<3x3x4x8xf32> {tf.aliasing_output = 3 : i32}, %arg3: tensor<8xf32> {tf.aliasing_output = 4 : i32}, %arg4: tensor<32x5xf32> {tf.aliasing_output = 5 : i32}, %arg5: tensor<5xf32> {tf.aliasing_output = 6 : i32}, %arg6: tensor<3x3x1x4xf32> {tf.aliasing_output = 7 : i32}, %arg7: tensor<4xf32> {tf.aliasing_output = 8 : i32}, %arg8: tensor<3x3x4x8xf32> {tf.aliasing_output = 9 : i32}, %arg9: tensor<8xf32> {tf.aliasing_output = 10 : i32}, %arg10: tensor<32x5xf32> {tf.aliasing_output = 11 : i32}, %arg11: tensor<5xf32> {tf.aliasing_output = 12 : i32}, %arg12: tensor<3x3x1x4xf32> {tf.aliasing_output = 13 : i32}, %arg13: tensor<4xf32> {tf.aliasing_output = 14 : i32}, %arg14: tensor<3x3x4x8xf32> {tf.aliasing_output = 15 : i32}, %arg15: tensor<8xf32> {tf.aliasing_output = 16 : i32}, %arg16: tensor<32x5xf32> {tf.aliasing_output = 17 : i32}, %arg17: tensor<5xf32> {tf.aliasing_output = 18 : i32}, %arg18: tensor<4x8x8x1xf32>, %arg19: tensor<4xi32>, %arg20: tensor<f32>, %arg21: tensor<i32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<3x3x1x4xf32> {jax.result_info = "result[1][0]"}, tensor<4xf32> {jax.result_info = "result[1][1]"}, tensor<3x3x4x8xf32> {jax.result_info = "result[1][2]"}, tensor<8xf32> {jax.result_info = "result[1][3]"}, tensor<32x5xf32> {jax.result_info = "result[1][4]"}, tensor<5xf32> {jax.result_info = "result[1][5]"}, tensor<3x3x1x4xf32> {jax.result_info = "result[2][0]"}, tensor<4xf32> {jax.result_info = "result[2][1]"}, tensor<3x3x4x8xf32> {jax.result_info = "result[2][2]"}, tensor<8xf32> {jax.result_info = "result[2][3]"}, tensor<32x5xf32> {jax.result_info = "result[2][4]"}, tensor<5xf32> {jax.result_info = "result[2][5]"}, tensor<3x3x1x4xf32> {jax.result_info = "result[3][0]"}, tensor<4xf32> {jax.result_info = "result[3][1]"}, tensor<3x3x4x8xf32> {jax.result_info = "result[3][2]"}, tensor<8xf32> {jax.result_info = "result[3][3]"}, tensor<32x5xf32> {jax.result_info = "result[3][4]"}, tensor<5xf32> {jax.result_info = "result[3][5]"}) {
    %0 = stablehlo.convolution(%arg18, %arg0) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<4x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<4x8x8x4xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [3] : (tensor<4xf32>) -> tensor<1x1x1x4xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : (tensor<1x1x1x4xf32>) -> tensor<4x8x8x4xf32>
    %3 = stablehlo.add %0, %2 : tensor<4x8x8x4xf32>
    %4 = call @relu(%3) : (tensor<4x8x8x4xf32>) -> tensor<4x8x8x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x8x8x4xf32>
    %6 = stablehlo.compare GT, %3, %5, FLOAT : (tensor<4x8x8x4xf32>, tensor<4x8x8x4xf32>) -> tensor<4x8x8x4xi1>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<f32>
    %8 = "stablehlo.reduce_window"(%4, %7) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg22: tensor<f32>, %arg23: tensor<f32>):
      %247 = stablehlo.maximum %arg22, %arg23 : tensor<f32>
      stablehlo.return %247 : tensor<f32>
    }) : (tensor<4x8x8x4xf32>, tensor<f32>) -> tensor<4x4x4x4xf32>
    %9 = stablehlo.convolution(%8, %arg2) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<4x4x4x4xf32>, tensor<3x3x4x8xf32>) -> tensor<4x4x4x8xf32>
    %10 = stablehlo.broadcast_in_dim %arg3, dims = [3] : (tensor<8xf32>) -> tensor<1x1x1x8xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0, 1, 2, 3] : (tensor<1x1x1x8xf32>) -> tensor<4x4x4x8xf32>
    %12 = stablehlo.add %9, %11 : tensor<4x4x4x8xf32>
    %13 = call @relu_0(%12) : (tensor<4x4x4x8xf32>) -> tensor<4x4x4x8xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4x4x4x8xf32>
    %15 = stablehlo.compare GT, %12, %14, FLOAT : (tensor<4x4x4x8xf32>, tensor<4x4x4x8xf32>) -> tensor<4x4x4x8xi1>
    %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<f32>
    %17 = "stablehlo.reduce_window"(%13, %16) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg22: tensor<f32>, %arg23: tensor<f32>):
      %247 = stablehlo.maximum %arg22, %arg23 : tensor<f32>
      stablehlo.return %247 : tensor<f32>
    }) : (tensor<4x4x4x8xf32>, tensor<f32>) -> tensor<4x2x2x8xf32>
    %18 = stablehlo.reshape %17 : (tensor<4x2x2x8xf32>) -> tensor<4x32xf32>
    %19 = stablehlo.dot_general %18, %arg4, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x32xf32>, tensor<32x5xf32>) -> tensor<4x5xf32>
    %20 = stablehlo.broadcast_in_dim %arg5, dims = [1] : (tensor<5xf32>) -> tensor<1x5xf32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [0, 1] : (tensor<1x5xf32>) -> tensor<4x5xf32>
    %22 = stablehlo.add %19, %21 : tensor<4x5xf32>
    %23 = stablehlo.broadcast_in_dim %arg19, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %24:2 = call @take_along_axis(%22, %23) : (tensor<4x5xf32>, tensor<4x1xi32>) -> (tensor<4x1xf32>, tensor<4x1x1xi32>)
    %25 = stablehlo.reshape %24#0 : (tensor<4x1xf32>) -> tensor<4xf32>
    %cst_3 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %26 = stablehlo.reduce(%22 init: %cst_3) applies stablehlo.maximum across dimensions = [1] : (tensor<4x5xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_4 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %27 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %28 = stablehlo.maximum %27, %26 : tensor<4xf32>
    %29 = stablehlo.is_finite %28 : (tensor<4xf32>) -> tensor<4xi1>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %30 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %31 = stablehlo.select %29, %28, %30 : tensor<4xi1>, tensor<4xf32>
    %32 = stablehlo.broadcast_in_dim %31, dims = [0] : (tensor<4xf32>) -> tensor<4x1xf32>
    %33 = stablehlo.broadcast_in_dim %32, dims = [0, 1] : (tensor<4x1xf32>) -> tensor<4x5xf32>
    %34 = stablehlo.subtract %22, %33 : tensor<4x5xf32>
    %35 = stablehlo.exponential %34 : tensor<4x5xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %36 = stablehlo.reduce(%35 init: %cst_6) applies stablehlo.add across dimensions = [1] : (tensor<4x5xf32>, tensor<f32>) -> tensor<4xf32>
    %37 = stablehlo.abs %36 : tensor<4xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %38 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %39 = stablehlo.compare GE, %36, %38, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %40 = stablehlo.log %37 : tensor<4xf32>
    %41 = stablehlo.add %40, %31 : tensor<4xf32>
    %42 = stablehlo.subtract %41, %25 : tensor<4xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %43 = stablehlo.reduce(%42 init: %cst_8) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %cst_9 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %44 = stablehlo.divide %43, %cst_9 : tensor<f32>
    %cst_10 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_11 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %45 = stablehlo.divide %cst_10, %cst_11 : tensor<f32>
    %46 = stablehlo.broadcast_in_dim %45, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %47 = stablehlo.negate %46 : tensor<4xf32>
    %48 = stablehlo.divide %46, %37 : tensor<4xf32>
    %cst_12 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %49 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %50 = stablehlo.select %39, %49, %48 : tensor<4xi1>, tensor<4xf32>
    %51 = stablehlo.select %39, %48, %49 : tensor<4xi1>, tensor<4xf32>
    %52 = stablehlo.negate %50 : tensor<4xf32>
    %53 = stablehlo.add %51, %52 : tensor<4xf32>
    %54 = stablehlo.broadcast_in_dim %53, dims = [0] : (tensor<4xf32>) -> tensor<4x5xf32>
    %55 = stablehlo.multiply %54, %35 : tensor<4x5xf32>
    %56 = stablehlo.broadcast_in_dim %47, dims = [0] : (tensor<4xf32>) -> tensor<4x1xf32>
    %57 = call @take_along_axis_1(%24#1, %56) : (tensor<4x1x1xi32>, tensor<4x1xf32>) -> tensor<4x5xf32>
    %58 = stablehlo.add %55, %57 : tensor<4x5xf32>
    %cst_13 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %59 = stablehlo.reduce(%58 init: %cst_13) applies stablehlo.add across dimensions = [0] : (tensor<4x5xf32>, tensor<f32>) -> tensor<5xf32>
    %60 = stablehlo.reshape %59 : (tensor<5xf32>) -> tensor<1x5xf32>
    %cst_14 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %61 = stablehlo.reduce(%60 init: %cst_14) applies stablehlo.add across dimensions = [0] : (tensor<1x5xf32>, tensor<f32>) -> tensor<5xf32>
    %62 = stablehlo.dot_general %58, %18, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x5xf32>, tensor<4x32xf32>) -> tensor<5x32xf32>
    %63 = stablehlo.transpose %62, dims = [1, 0] : (tensor<5x32xf32>) -> tensor<32x5xf32>
    %64 = stablehlo.dot_general %58, %arg4, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x5xf32>, tensor<32x5xf32>) -> tensor<4x32xf32>
    %65 = stablehlo.reshape %64 : (tensor<4x32xf32>) -> tensor<4x2x2x8xf32>
    %cst_15 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %66 = stablehlo.pad %13, %cst_15, low = [0, 0, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<4x4x4x8xf32>, tensor<f32>) -> tensor<4x4x4x8xf32>
    %cst_16 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %67 = "stablehlo.select_and_scatter"(%66, %65, %cst_16) <{padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg22: tensor<f32>, %arg23: tensor<f32>):
      %247 = stablehlo.compare GE, %arg22, %arg23, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %247 : tensor<i1>
    }, {
    ^bb0(%arg22: tensor<f32>, %arg23: tensor<f32>):
      %247 = stablehlo.add %arg22, %arg23 : tensor<f32>
      stablehlo.return %247 : tensor<f32>
    }) : (tensor<4x4x4x8xf32>, tensor<4x2x2x8xf32>, tensor<f32>) -> tensor<4x4x4x8xf32>
    %68 = stablehlo.slice %67 [0:4, 0:4, 0:4, 0:8] : (tensor<4x4x4x8xf32>) -> tensor<4x4x4x8xf32>
    %cst_17 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %69 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<4x4x4x8xf32>
    %70 = stablehlo.select %15, %68, %69 : tensor<4x4x4x8xi1>, tensor<4x4x4x8xf32>
    %cst_18 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %71 = stablehlo.reduce(%70 init: %cst_18) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<4x4x4x8xf32>, tensor<f32>) -> tensor<8xf32>
    %72 = stablehlo.reshape %71 : (tensor<8xf32>) -> tensor<1x1x1x8xf32>
    %cst_19 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %73 = stablehlo.reduce(%72 init: %cst_19) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<1x1x1x8xf32>, tensor<f32>) -> tensor<8xf32>
    %74 = stablehlo.convolution(%8, %70) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<4x4x4x4xf32>, tensor<4x4x4x8xf32>) -> tensor<3x3x4x8xf32>
    %75 = stablehlo.reverse %arg2, dims = [0, 1] : tensor<3x3x4x8xf32>
    %76 = stablehlo.convolution(%70, %75) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<4x4x4x8xf32>, tensor<3x3x4x8xf32>) -> tensor<4x4x4x4xf32>
    %cst_20 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %77 = stablehlo.pad %4, %cst_20, low = [0, 0, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<4x8x8x4xf32>, tensor<f32>) -> tensor<4x8x8x4xf32>
    %cst_21 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %78 = "stablehlo.select_and_scatter"(%77, %76, %cst_21) <{padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg22: tensor<f32>, %arg23: tensor<f32>):
      %247 = stablehlo.compare GE, %arg22, %arg23, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %247 : tensor<i1>
    }, {
    ^bb0(%arg22: tensor<f32>, %arg23: tensor<f32>):
      %247 = stablehlo.add %arg22, %arg23 : tensor<f32>
      stablehlo.return %247 : tensor<f32>
    }) : (tensor<4x8x8x4xf32>, tensor<4x4x4x4xf32>, tensor<f32>) -> tensor<4x8x8x4xf32>
    %79 = stablehlo.slice %78 [0:4, 0:8, 0:8, 0:4] : (tensor<4x8x8x4xf32>) -> tensor<4x8x8x4xf32>
    %cst_22 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %80 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<4x8x8x4xf32>
    %81 = stablehlo.select %6, %79, %80 : tensor<4x8x8x4xi1>, tensor<4x8x8x4xf32>
    %cst_23 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %82 = stablehlo.reduce(%81 init: %cst_23) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<4x8x8x4xf32>, tensor<f32>) -> tensor<4xf32>
    %83 = stablehlo.reshape %82 : (tensor<4xf32>) -> tensor<1x1x1x4xf32>
    %cst_24 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %84 = stablehlo.reduce(%83 init: %cst_24) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<4xf32>
    %85 = stablehlo.convolution(%arg18, %81) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<4x8x8x1xf32>, tensor<4x8x8x4xf32>) -> tensor<3x3x1x4xf32>
    %86 = stablehlo.convert %arg21 : (tensor<i32>) -> tensor<f32>
    %cst_25 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %87 = stablehlo.broadcast_in_dim %cst_25, dims = [] : (tensor<f32>) -> tensor<3x3x1x4xf32>
    %88 = stablehlo.multiply %87, %arg6 : tensor<3x3x1x4xf32>
    %cst_26 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %89 = stablehlo.broadcast_in_dim %cst_26, dims = [] : (tensor<f32>) -> tensor<3x3x1x4xf32>
    %90 = stablehlo.multiply %89, %85 : tensor<3x3x1x4xf32>
    %91 = stablehlo.add %88, %90 : tensor<3x3x1x4xf32>
    %cst_27 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %92 = stablehlo.broadcast_in_dim %cst_27, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %93 = stablehlo.multiply %92, %arg7 : tensor<4xf32>
    %cst_28 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %94 = stablehlo.broadcast_in_dim %cst_28, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %95 = stablehlo.multiply %94, %84 : tensor<4xf32>
    %96 = stablehlo.add %93, %95 : tensor<4xf32>
    %cst_29 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %97 = stablehlo.broadcast_in_dim %cst_29, dims = [] : (tensor<f32>) -> tensor<3x3x4x8xf32>
    %98 = stablehlo.multiply %97, %arg8 : tensor<3x3x4x8xf32>
    %cst_30 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %99 = stablehlo.broadcast_in_dim %cst_30, dims = [] : (tensor<f32>) -> tensor<3x3x4x8xf32>
    %100 = stablehlo.multiply %99, %74 : tensor<3x3x4x8xf32>
    %101 = stablehlo.add %98, %100 : tensor<3x3x4x8xf32>
    %cst_31 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %102 = stablehlo.broadcast_in_dim %cst_31, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %103 = stablehlo.multiply %102, %arg9 : tensor<8xf32>
    %cst_32 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %104 = stablehlo.broadcast_in_dim %cst_32, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %105 = stablehlo.multiply %104, %73 : tensor<8xf32>
    %106 = stablehlo.add %103, %105 : tensor<8xf32>
    %cst_33 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %107 = stablehlo.broadcast_in_dim %cst_33, dims = [] : (tensor<f32>) -> tensor<32x5xf32>
    %108 = stablehlo.multiply %107, %arg10 : tensor<32x5xf32>
    %cst_34 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %109 = stablehlo.broadcast_in_dim %cst_34, dims = [] : (tensor<f32>) -> tensor<32x5xf32>
    %110 = stablehlo.multiply %109, %63 : tensor<32x5xf32>
    %111 = stablehlo.add %108, %110 : tensor<32x5xf32>
    %cst_35 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %112 = stablehlo.broadcast_in_dim %cst_35, dims = [] : (tensor<f32>) -> tensor<5xf32>
    %113 = stablehlo.multiply %112, %arg11 : tensor<5xf32>
    %cst_36 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %114 = stablehlo.broadcast_in_dim %cst_36, dims = [] : (tensor<f32>) -> tensor<5xf32>
    %115 = stablehlo.multiply %114, %61 : tensor<5xf32>
    %116 = stablehlo.add %113, %115 : tensor<5xf32>
    %cst_37 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %117 = stablehlo.broadcast_in_dim %cst_37, dims = [] : (tensor<f32>) -> tensor<3x3x1x4xf32>
    %118 = stablehlo.multiply %117, %arg12 : tensor<3x3x1x4xf32>
    %cst_38 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %119 = stablehlo.broadcast_in_dim %cst_38, dims = [] : (tensor<f32>) -> tensor<3x3x1x4xf32>
    %120 = stablehlo.multiply %119, %85 : tensor<3x3x1x4xf32>
    %121 = stablehlo.multiply %120, %85 : tensor<3x3x1x4xf32>
    %122 = stablehlo.add %118, %121 : tensor<3x3x1x4xf32>
    %cst_39 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %123 = stablehlo.broadcast_in_dim %cst_39, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %124 = stablehlo.multiply %123, %arg13 : tensor<4xf32>
    %cst_40 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %125 = stablehlo.broadcast_in_dim %cst_40, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %126 = stablehlo.multiply %125, %84 : tensor<4xf32>
    %127 = stablehlo.multiply %126, %84 : tensor<4xf32>
    %128 = stablehlo.add %124, %127 : tensor<4xf32>
    %cst_41 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %129 = stablehlo.broadcast_in_dim %cst_41, dims = [] : (tensor<f32>) -> tensor<3x3x4x8xf32>
    %130 = stablehlo.multiply %129, %arg14 : tensor<3x3x4x8xf32>
    %cst_42 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %131 = stablehlo.broadcast_in_dim %cst_42, dims = [] : (tensor<f32>) -> tensor<3x3x4x8xf32>
    %132 = stablehlo.multiply %131, %74 : tensor<3x3x4x8xf32>
    %133 = stablehlo.multiply %132, %74 : tensor<3x3x4x8xf32>
    %134 = stablehlo.add %130, %133 : tensor<3x3x4x8xf32>
    %cst_43 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %135 = stablehlo.broadcast_in_dim %cst_43, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %136 = stablehlo.multiply %135, %arg15 : tensor<8xf32>
    %cst_44 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %137 = stablehlo.broadcast_in_dim %cst_44, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %138 = stablehlo.multiply %137, %73 : tensor<8xf32>
    %139 = stablehlo.multiply %138, %73 : tensor<8xf32>
    %140 = stablehlo.add %136, %139 : tensor<8xf32>
    %cst_45 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %141 = stablehlo.broadcast_in_dim %cst_45, dims = [] : (tensor<f32>) -> tensor<32x5xf32>
    %142 = stablehlo.multiply %141, %arg16 : tensor<32x5xf32>
    %cst_46 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %143 = stablehlo.broadcast_in_dim %cst_46, dims = [] : (tensor<f32>) -> tensor<32x5xf32>
    %144 = stablehlo.multiply %143, %63 : tensor<32x5xf32>
    %145 = stablehlo.multiply %144, %63 : tensor<32x5xf32>
    %146 = stablehlo.add %142, %145 : tensor<32x5xf32>
    %cst_47 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %147 = stablehlo.broadcast_in_dim %cst_47, dims = [] : (tensor<f32>) -> tensor<5xf32>
    %148 = stablehlo.multiply %147, %arg17 : tensor<5xf32>
    %cst_48 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %149 = stablehlo.broadcast_in_dim %cst_48, dims = [] : (tensor<f32>) -> tensor<5xf32>
    %150 = stablehlo.multiply %149, %61 : tensor<5xf32>
    %151 = stablehlo.multiply %150, %61 : tensor<5xf32>
    %152 = stablehlo.add %148, %151 : tensor<5xf32>
    %cst_49 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %153 = stablehlo.power %cst_49, %86 : tensor<f32>
    %cst_50 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %154 = stablehlo.subtract %cst_50, %153 : tensor<f32>
    %cst_51 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %155 = stablehlo.power %cst_51, %86 : tensor<f32>
    %cst_52 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %156 = stablehlo.subtract %cst_52, %155 : tensor<f32>
    %cst_53 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %157 = stablehlo.multiply %arg20, %cst_53 : tensor<f32>
    %cst_54 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %158 = stablehlo.subtract %cst_54, %157 : tensor<f32>
    %159 = stablehlo.broadcast_in_dim %158, dims = [] : (tensor<f32>) -> tensor<3x3x1x4xf32>
    %160 = stablehlo.multiply %arg0, %159 : tensor<3x3x1x4xf32>
    %161 = stablehlo.divide %arg20, %154 : tensor<f32>
    %162 = stablehlo.broadcast_in_dim %161, dims = [] : (tensor<f32>) -> tensor<3x3x1x4xf32>
    %163 = stablehlo.multiply %162, %91 : tensor<3x3x1x4xf32>
    %164 = stablehlo.sqrt %122 : tensor<3x3x1x4xf32>
    %165 = stablehlo.sqrt %156 : tensor<f32>
    %166 = stablehlo.broadcast_in_dim %165, dims = [] : (tensor<f32>) -> tensor<3x3x1x4xf32>
    %167 = stablehlo.divide %164, %166 : tensor<3x3x1x4xf32>
    %cst_55 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %168 = stablehlo.broadcast_in_dim %cst_55, dims = [] : (tensor<f32>) -> tensor<3x3x1x4xf32>
    %169 = stablehlo.add %167, %168 : tensor<3x3x1x4xf32>
    %170 = stablehlo.divide %163, %169 : tensor<3x3x1x4xf32>
    %171 = stablehlo.subtract %160, %170 : tensor<3x3x1x4xf32>
    %cst_56 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %172 = stablehlo.multiply %arg20, %cst_56 : tensor<f32>
    %cst_57 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %173 = stablehlo.subtract %cst_57, %172 : tensor<f32>
    %174 = stablehlo.broadcast_in_dim %173, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %175 = stablehlo.multiply %arg1, %174 : tensor<4xf32>
    %176 = stablehlo.divide %arg20, %154 : tensor<f32>
    %177 = stablehlo.broadcast_in_dim %176, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %178 = stablehlo.multiply %177, %96 : tensor<4xf32>
    %179 = stablehlo.sqrt %128 : tensor<4xf32>
    %180 = stablehlo.sqrt %156 : tensor<f32>
    %181 = stablehlo.broadcast_in_dim %180, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %182 = stablehlo.divide %179, %181 : tensor<4xf32>
    %cst_58 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %183 = stablehlo.broadcast_in_dim %cst_58, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %184 = stablehlo.add %182, %183 : tensor<4xf32>
    %185 = stablehlo.divide %178, %184 : tensor<4xf32>
    %186 = stablehlo.subtract %175, %185 : tensor<4xf32>
    %cst_59 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %187 = stablehlo.multiply %arg20, %cst_59 : tensor<f32>
    %cst_60 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %188 = stablehlo.subtract %cst_60, %187 : tensor<f32>
    %189 = stablehlo.broadcast_in_dim %188, dims = [] : (tensor<f32>) -> tensor<3x3x4x8xf32>
    %190 = stablehlo.multiply %arg2, %189 : tensor<3x3x4x8xf32>
    %191 = stablehlo.divide %arg20, %154 : tensor<f32>
    %192 = stablehlo.broadcast_in_dim %191, dims = [] : (tensor<f32>) -> tensor<3x3x4x8xf32>
    %193 = stablehlo.multiply %192, %101 : tensor<3x3x4x8xf32>
    %194 = stablehlo.sqrt %134 : tensor<3x3x4x8xf32>
    %195 = stablehlo.sqrt %156 : tensor<f32>
    %196 = stablehlo.broadcast_in_dim %195, dims = [] : (tensor<f32>) -> tensor<3x3x4x8xf32>
    %197 = stablehlo.divide %194, %196 : tensor<3x3x4x8xf32>
    %cst_61 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %198 = stablehlo.broadcast_in_dim %cst_61, dims = [] : (tensor<f32>) -> tensor<3x3x4x8xf32>
    %199 = stablehlo.add %197, %198 : tensor<3x3x4x8xf32>
    %200 = stablehlo.divide %193, %199 : tensor<3x3x4x8xf32>
    %201 = stablehlo.subtract %190, %200 : tensor<3x3x4x8xf32>
    %cst_62 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %202 = stablehlo.multiply %arg20, %cst_62 : tensor<f32>
    %cst_63 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %203 = stablehlo.subtract %cst_63, %202 : tensor<f32>
    %204 = stablehlo.broadcast_in_dim %203, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %205 = stablehlo.multiply %arg3, %204 : tensor<8xf32>
    %206 = stablehlo.divide %arg20, %154 : tensor<f32>
    %207 = stablehlo.broadcast_in_dim %206, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %208 = stablehlo.multiply %207, %106 : tensor<8xf32>
    %209 = stablehlo.sqrt %140 : tensor<8xf32>
    %210 = stablehlo.sqrt %156 : tensor<f32>
    %211 = stablehlo.broadcast_in_dim %210, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %212 = stablehlo.divide %209, %211 : tensor<8xf32>
    %cst_64 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %213 = stablehlo.broadcast_in_dim %cst_64, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %214 = stablehlo.add %212, %213 : tensor<8xf32>
    %215 = stablehlo.divide %208, %214 : tensor<8xf32>
    %216 = stablehlo.subtract %205, %215 : tensor<8xf32>
    %cst_65 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %217 = stablehlo.multiply %arg20, %cst_65 : tensor<f32>
    %cst_66 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %218 = stablehlo.subtract %cst_66, %217 : tensor<f32>
    %219 = stablehlo.broadcast_in_dim %218, dims = [] : (tensor<f32>) -> tensor<32x5xf32>
    %220 = stablehlo.multiply %arg4, %219 : tensor<32x5xf32>
    %221 = stablehlo.divide %arg20, %154 : tensor<f32>
    %222 = stablehlo.broadcast_in_dim %221, dims = [] : (tensor<f32>) -> tensor<32x5xf32>
    %223 = stablehlo.multiply %222, %111 : tensor<32x5xf32>
    %224 = stablehlo.sqrt %146 : tensor<32x5xf32>
    %225 = stablehlo.sqrt %156 : tensor<f32>
    %226 = stablehlo.broadcast_in_dim %225, dims = [] : (tensor<f32>) -> tensor<32x5xf32>
    %227 = stablehlo.divide %224, %226 : tensor<32x5xf32>
    %cst_67 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %228 = stablehlo.broadcast_in_dim %cst_67, dims = [] : (tensor<f32>) -> tensor<32x5xf32>
    %229 = stablehlo.add %227, %228 : tensor<32x5xf32>
    %230 = stablehlo.divide %223, %229 : tensor<32x5xf32>
    %231 = stablehlo.subtract %220, %230 : tensor<32x5xf32>
    %cst_68 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %232 = stablehlo.multiply %arg20, %cst_68 : tensor<f32>
    %cst_69 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %233 = stablehlo.subtract %cst_69, %232 : tensor<f32>
    %234 = stablehlo.broadcast_in_dim %233, dims = [] : (tensor<f32>) -> tensor<5xf32>
    %235 = stablehlo.multiply %arg5, %234 : tensor<5xf32>
    %236 = stablehlo.divide %arg20, %154 : tensor<f32>
    %237 = stablehlo.broadcast_in_dim %236, dims = [] : (tensor<f32>) -> tensor<5xf32>
    %238 = stablehlo.multiply %237, %116 : tensor<5xf32>
    %239 = stablehlo.sqrt %152 : tensor<5xf32>
    %240 = stablehlo.sqrt %156 : tensor<f32>
    %241 = stablehlo.broadcast_in_dim %240, dims = [] : (tensor<f32>) -> tensor<5xf32>
    %242 = stablehlo.divide %239, %241 : tensor<5xf32>
    %cst_70 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %243 = stablehlo.broadcast_in_dim %cst_70, dims = [] : (tensor<f32>) -> tensor<5xf32>
    %244 = stablehlo.add %242, %243 : tensor<5xf32>
    %245 = stablehlo.divide %238, %244 : tensor<5xf32>
    %246 = stablehlo.subtract %235, %245 : tensor<5xf32>
    return %44, %171, %186, %201, %216, %231, %246, %91, %96, %101, %106, %111, %116, %122, %128, %134, %140, %146, %152 : tensor<f32>, tensor<3x3x1x4xf32>, tensor<4xf32>, tensor<3x3x4x8xf32>, tensor<8xf32>, tensor<32x5xf32>, tensor<5xf32>, tensor<3x3x1x4xf32>, tensor<4xf32>, tensor<3x3x4x8xf32>, tensor<8xf32>, tensor<32x5xf32>, tensor<5xf32>, tensor<3x3x1x4xf32>, tensor<4xf32>, tensor<3x3x4x8xf32>, tensor<8xf32>, tensor<32x5xf32>, tensor<5xf32>
  }
  func.func private @relu(%arg0: tensor<4x8x8x4xf32>) -> tensor<4x8x8x4xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x8x8x4xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<4x8x8x4xf32>
    return %1 : tensor<4x8x8x4xf32>
  }
  func.func private @relu_0(%arg0: tensor<4x4x4x8xf32>) -> tensor<4x4x4x8xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4x4x8xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<4x4x4x8xf32>
    return %1 : tensor<4x4x4x8xf32>
  }
  func.func private @take_along_axis(%arg0: tensor<4x5xf32>, %arg1: tensor<4x1xi32>) -> (tensor<4x1xf32>, tensor<4x1x1xi32>) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4x1xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<4x1xi32>, tensor<4x1xi32>) -> tensor<4x1xi1>
    %c_0 = stablehlo.constant dense<5> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<4x1xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<4x1xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<4x1xi1>, tensor<4x1xi32>
    %5 = stablehlo.reshape %4 : (tensor<4x1xi32>) -> tensor<4x1x1xi32>
    %c_1 = stablehlo.constant dense<4> : tensor<1xi32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<4x1x1xi32>
    %7 = stablehlo.compare GE, %5, %6, SIGNED : (tensor<4x1x1xi32>, tensor<4x1x1xi32>) -> tensor<4x1x1xi1>
    %8 = stablehlo.broadcast_in_dim %c_1, dims = [2] : (tensor<1xi32>) -> tensor<1x1x1xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1, 2] : (tensor<1x1x1xi32>) -> tensor<4x1x1xi32>
    %10 = stablehlo.compare LE, %5, %9, SIGNED : (tensor<4x1x1xi32>, tensor<4x1x1xi32>) -> tensor<4x1x1xi1>
    %11 = stablehlo.and %7, %10 : tensor<4x1x1xi1>
    %c_3 = stablehlo.constant dense<true> : tensor<i1>
    %12 = stablehlo.reduce(%11 init: %c_3) applies stablehlo.and across dimensions = [2] : (tensor<4x1x1xi1>, tensor<i1>) -> tensor<4x1xi1>
    %13 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1>}> : (tensor<4x5xf32>, tensor<4x1x1xi32>) -> tensor<4x1xf32>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x1xf32>
    %15 = stablehlo.select %12, %13, %14 : tensor<4x1xi1>, tensor<4x1xf32>
    return %15, %5 : tensor<4x1xf32>, tensor<4x1x1xi32>
  }
  func.func private @take_along_axis_1(%arg0: tensor<4x1x1xi32>, %arg1: tensor<4x1xf32>) -> tensor<4x5xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %1 = "stablehlo.scatter"(%0, %arg0, %arg1) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 2>, unique_indices = false}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %2 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) : (tensor<4x5xf32>, tensor<4x1x1xi32>, tensor<4x1xf32>) -> tensor<4x5xf32>
    return %1 : tensor<4x5xf32>
  }
}
