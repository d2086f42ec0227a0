module @jit_attention_adamw attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x8xf32> {tf.aliasing_output = 1 : i32}, %arg1: tensor<8x8xf32> {tf.aliasing_output = 2 : i32}, %arg2: tensor<8x8xf32> {tf.aliasing_output = 3 : i32}, %arg3: tensor<8x8xf32> {tf.aliasing_output = 4 : i32}, %arg4: tensor<8x8xf32>, %arg5: tensor<8x8xf32>, %arg6: tensor<8x8xf32>, %arg7: tensor<8x8xf32>, %arg8: tensor<8x8xf32>, %arg9: tensor<8x8xf32>, %arg10: tensor<8x8xf32>, %arg11: tensor<8x8xf32>, %arg12: tensor<2x5x8xf32>, %arg13: tensor<f32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<8x8xf32> {jax.result_info = "result[1]"}, tensor<8x8xf32> {jax.result_info = "result[2]"}, tensor<8x8xf32> {jax.result_info = "result[3]"}, tensor<8x8xf32> {jax.result_info = "result[4]"}, tensor<8x8xf32> {jax.result_info = "result[5]"}, tensor<8x8xf32> {jax.result_info = "result[6]"}, tensor<8x8xf32> {jax.result_info = "result[7]"}, tensor<8x8xf32> {jax.result_info = "result[8]"}, tensor<8x8xf32> {jax.result_info = "result[9]"}, tensor<8x8xf32> {jax.result_info = "result[10]"}, tensor<8x8xf32> {jax.result_info = "result[11]"}, tensor<8x8xf32> {jax.result_info = "result[12]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg12 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<2x5x8xf32>, tensor<f32>) -> tensor<2x5xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %cst_0 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %3 = stablehlo.divide %1, %2 : tensor<2x5x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x8xf32>
    %5 = stablehlo.subtract %arg12, %4 : tensor<2x5x8xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %6 = call @_var(%arg12, %c) : (tensor<2x5x8xf32>, tensor<i32>) -> tensor<2x5x1xf32>
    %cst_1 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %8 = stablehlo.add %6, %7 : tensor<2x5x1xf32>
    %9 = stablehlo.sqrt %8 : tensor<2x5x1xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x8xf32>
    %11 = stablehlo.divide %5, %10 : tensor<2x5x8xf32>
    %12 = stablehlo.dot_general %11, %arg0, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<8x8xf32>) -> tensor<2x5x8xf32>
    %13 = stablehlo.dot_general %11, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<8x8xf32>) -> tensor<2x5x8xf32>
    %14 = stablehlo.dot_general %11, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<8x8xf32>) -> tensor<2x5x8xf32>
    %15 = stablehlo.dot_general %12, %13, batching_dims = [0] x [0], contracting_dims = [2] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x5xf32>
    %cst_2 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %16 = stablehlo.sqrt %cst_2 : tensor<f32>
    %17 = stablehlo.convert %16 : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [] : (tensor<f32>) -> tensor<2x5x5xf32>
    %19 = stablehlo.divide %15, %18 : tensor<2x5x5xf32>
    %c_3 = stablehlo.constant dense<true> : tensor<i1>
    %20 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i1>) -> tensor<5x5xi1>
    %21 = call @tril(%20) : (tensor<5x5xi1>) -> tensor<5x5xi1>
    %cst_4 = stablehlo.constant dense<-1.000000e+09> : tensor<f32>
    %22:2 = call @_where_0(%21, %19, %cst_4) : (tensor<5x5xi1>, tensor<2x5x5xf32>, tensor<f32>) -> (tensor<2x5x5xf32>, tensor<2x5x5xi1>)
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %23 = stablehlo.reduce(%22#0 init: %cst_5) applies stablehlo.maximum across dimensions = [2] : (tensor<2x5x5xf32>, tensor<f32>) -> tensor<2x5xf32>
    %cst_6 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %24 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<2x5xf32>
    %25 = stablehlo.maximum %24, %23 : tensor<2x5xf32>
    %26 = stablehlo.broadcast_in_dim %25, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x5xf32>
    %28 = stablehlo.subtract %22#0, %27 : tensor<2x5x5xf32>
    %29 = stablehlo.exponential %28 : tensor<2x5x5xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %30 = stablehlo.reduce(%29 init: %cst_7) applies stablehlo.add across dimensions = [2] : (tensor<2x5x5xf32>, tensor<f32>) -> tensor<2x5xf32>
    %31 = stablehlo.broadcast_in_dim %30, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %32 = stablehlo.broadcast_in_dim %31, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x5xf32>
    %33 = stablehlo.divide %29, %32 : tensor<2x5x5xf32>
    %34 = stablehlo.multiply %31, %31 : tensor<2x5x1xf32>
    %cst_8 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %35 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %36 = stablehlo.divide %35, %34 : tensor<2x5x1xf32>
    %37 = stablehlo.dot_general %33, %14, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x5xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
    %38 = stablehlo.dot_general %37, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<8x8xf32>) -> tensor<2x5x8xf32>
    %39 = stablehlo.multiply %38, %38 : tensor<2x5x8xf32>
    %40 = stablehlo.multiply %39, %38 : tensor<2x5x8xf32>
    %41 = stablehlo.multiply %38, %38 : tensor<2x5x8xf32>
    %cst_9 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %42 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %43 = stablehlo.multiply %42, %41 : tensor<2x5x8xf32>
    %cst_10 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %44 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %45 = stablehlo.multiply %44, %40 : tensor<2x5x8xf32>
    %46 = stablehlo.add %38, %45 : tensor<2x5x8xf32>
    %cst_11 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %47 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %48 = stablehlo.multiply %47, %46 : tensor<2x5x8xf32>
    %49 = stablehlo.tanh %48 : tensor<2x5x8xf32>
    %cst_12 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %50 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %51 = stablehlo.subtract %50, %49 : tensor<2x5x8xf32>
    %cst_13 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %52 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %53 = stablehlo.add %52, %49 : tensor<2x5x8xf32>
    %cst_14 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %54 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %55 = stablehlo.multiply %54, %53 : tensor<2x5x8xf32>
    %56 = stablehlo.multiply %38, %55 : tensor<2x5x8xf32>
    %57 = stablehlo.multiply %56, %56 : tensor<2x5x8xf32>
    %cst_15 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %58 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %59 = stablehlo.multiply %58, %56 : tensor<2x5x8xf32>
    %cst_16 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %60 = stablehlo.reduce(%57 init: %cst_16) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<2x5x8xf32>, tensor<f32>) -> tensor<f32>
    %cst_17 = stablehlo.constant dense<8.000000e+01> : tensor<f32>
    %61 = stablehlo.divide %60, %cst_17 : tensor<f32>
    %cst_18 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_19 = stablehlo.constant dense<8.000000e+01> : tensor<f32>
    %62 = stablehlo.divide %cst_18, %cst_19 : tensor<f32>
    %63 = stablehlo.broadcast_in_dim %62, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %64 = stablehlo.multiply %63, %59 : tensor<2x5x8xf32>
    %65 = stablehlo.multiply %38, %64 : tensor<2x5x8xf32>
    %66 = stablehlo.multiply %64, %55 : tensor<2x5x8xf32>
    %cst_20 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %67 = stablehlo.broadcast_in_dim %cst_20, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %68 = stablehlo.multiply %67, %65 : tensor<2x5x8xf32>
    %69 = stablehlo.multiply %68, %51 : tensor<2x5x8xf32>
    %70 = stablehlo.multiply %69, %49 : tensor<2x5x8xf32>
    %71 = stablehlo.add %69, %70 : tensor<2x5x8xf32>
    %cst_21 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %72 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %73 = stablehlo.multiply %72, %71 : tensor<2x5x8xf32>
    %74 = stablehlo.add %66, %73 : tensor<2x5x8xf32>
    %cst_22 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %75 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<2x5x8xf32>
    %76 = stablehlo.multiply %75, %73 : tensor<2x5x8xf32>
    %77 = stablehlo.multiply %76, %43 : tensor<2x5x8xf32>
    %78 = stablehlo.add %74, %77 : tensor<2x5x8xf32>
    %79 = stablehlo.dot_general %78, %37, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<8x8xf32>
    %80 = stablehlo.transpose %79, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %81 = stablehlo.dot_general %78, %arg3, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<8x8xf32>) -> tensor<2x5x8xf32>
    %82 = stablehlo.dot_general %81, %33, batching_dims = [0] x [0], contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<2x5x5xf32>) -> tensor<2x8x5xf32>
    %83 = stablehlo.transpose %82, dims = [0, 2, 1] : (tensor<2x8x5xf32>) -> tensor<2x5x8xf32>
    %84 = stablehlo.dot_general %81, %14, batching_dims = [0] x [0], contracting_dims = [2] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x5xf32>
    %85 = stablehlo.broadcast_in_dim %36, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x5xf32>
    %86 = stablehlo.multiply %84, %85 : tensor<2x5x5xf32>
    %87 = stablehlo.multiply %86, %29 : tensor<2x5x5xf32>
    %cst_23 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %88 = stablehlo.reduce(%87 init: %cst_23) applies stablehlo.add across dimensions = [2] : (tensor<2x5x5xf32>, tensor<f32>) -> tensor<2x5xf32>
    %89 = stablehlo.reshape %88 : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %90 = stablehlo.negate %89 : tensor<2x5x1xf32>
    %91 = stablehlo.broadcast_in_dim %31, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x5xf32>
    %92 = stablehlo.divide %84, %91 : tensor<2x5x5xf32>
    %cst_24 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %93 = stablehlo.reduce(%90 init: %cst_24) applies stablehlo.add across dimensions = [2] : (tensor<2x5x1xf32>, tensor<f32>) -> tensor<2x5xf32>
    %94 = stablehlo.broadcast_in_dim %93, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x5xf32>
    %95 = stablehlo.add %92, %94 : tensor<2x5x5xf32>
    %96 = stablehlo.multiply %95, %29 : tensor<2x5x5xf32>
    %97 = call @_where_1(%22#1, %96) : (tensor<2x5x5xi1>, tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
    %98 = stablehlo.broadcast_in_dim %17, dims = [] : (tensor<f32>) -> tensor<2x5x5xf32>
    %99 = stablehlo.divide %97, %98 : tensor<2x5x5xf32>
    %100 = stablehlo.dot_general %99, %12, batching_dims = [0] x [0], contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x5xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
    %101 = stablehlo.dot_general %99, %13, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x5xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
    %102 = stablehlo.dot_general %83, %11, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<8x8xf32>
    %103 = stablehlo.transpose %102, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %104 = stablehlo.dot_general %100, %11, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<8x8xf32>
    %105 = stablehlo.transpose %104, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %106 = stablehlo.dot_general %101, %11, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<8x8xf32>
    %107 = stablehlo.transpose %106, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %cst_25 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %108 = stablehlo.add %arg13, %cst_25 : tensor<f32>
    %cst_26 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %109 = stablehlo.broadcast_in_dim %cst_26, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %110 = stablehlo.multiply %109, %arg4 : tensor<8x8xf32>
    %cst_27 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %111 = stablehlo.broadcast_in_dim %cst_27, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %112 = stablehlo.multiply %111, %107 : tensor<8x8xf32>
    %113 = stablehlo.add %110, %112 : tensor<8x8xf32>
    %cst_28 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %114 = stablehlo.broadcast_in_dim %cst_28, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %115 = stablehlo.multiply %114, %arg8 : tensor<8x8xf32>
    %cst_29 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %116 = stablehlo.broadcast_in_dim %cst_29, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %117 = stablehlo.multiply %116, %107 : tensor<8x8xf32>
    %118 = stablehlo.multiply %117, %107 : tensor<8x8xf32>
    %119 = stablehlo.add %115, %118 : tensor<8x8xf32>
    %cst_30 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %120 = stablehlo.power %cst_30, %108 : tensor<f32>
    %cst_31 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %121 = stablehlo.subtract %cst_31, %120 : tensor<f32>
    %122 = stablehlo.broadcast_in_dim %121, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %123 = stablehlo.divide %113, %122 : tensor<8x8xf32>
    %cst_32 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %124 = stablehlo.power %cst_32, %108 : tensor<f32>
    %cst_33 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %125 = stablehlo.subtract %cst_33, %124 : tensor<f32>
    %126 = stablehlo.broadcast_in_dim %125, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %127 = stablehlo.divide %119, %126 : tensor<8x8xf32>
    %128 = stablehlo.sqrt %127 : tensor<8x8xf32>
    %cst_34 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %129 = stablehlo.broadcast_in_dim %cst_34, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %130 = stablehlo.add %128, %129 : tensor<8x8xf32>
    %131 = stablehlo.divide %123, %130 : tensor<8x8xf32>
    %cst_35 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %132 = stablehlo.broadcast_in_dim %cst_35, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %133 = stablehlo.multiply %132, %arg0 : tensor<8x8xf32>
    %134 = stablehlo.add %131, %133 : tensor<8x8xf32>
    %cst_36 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %135 = stablehlo.broadcast_in_dim %cst_36, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %136 = stablehlo.multiply %135, %134 : tensor<8x8xf32>
    %137 = stablehlo.subtract %arg0, %136 : tensor<8x8xf32>
    %cst_37 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %138 = stablehlo.broadcast_in_dim %cst_37, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %139 = stablehlo.multiply %138, %arg5 : tensor<8x8xf32>
    %cst_38 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %140 = stablehlo.broadcast_in_dim %cst_38, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %141 = stablehlo.multiply %140, %105 : tensor<8x8xf32>
    %142 = stablehlo.add %139, %141 : tensor<8x8xf32>
    %cst_39 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %143 = stablehlo.broadcast_in_dim %cst_39, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %144 = stablehlo.multiply %143, %arg9 : tensor<8x8xf32>
    %cst_40 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %145 = stablehlo.broadcast_in_dim %cst_40, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %146 = stablehlo.multiply %145, %105 : tensor<8x8xf32>
    %147 = stablehlo.multiply %146, %105 : tensor<8x8xf32>
    %148 = stablehlo.add %144, %147 : tensor<8x8xf32>
    %cst_41 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %149 = stablehlo.power %cst_41, %108 : tensor<f32>
    %cst_42 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %150 = stablehlo.subtract %cst_42, %149 : tensor<f32>
    %151 = stablehlo.broadcast_in_dim %150, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %152 = stablehlo.divide %142, %151 : tensor<8x8xf32>
    %cst_43 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %153 = stablehlo.power %cst_43, %108 : tensor<f32>
    %cst_44 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %154 = stablehlo.subtract %cst_44, %153 : tensor<f32>
    %155 = stablehlo.broadcast_in_dim %154, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %156 = stablehlo.divide %148, %155 : tensor<8x8xf32>
    %157 = stablehlo.sqrt %156 : tensor<8x8xf32>
    %cst_45 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %158 = stablehlo.broadcast_in_dim %cst_45, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %159 = stablehlo.add %157, %158 : tensor<8x8xf32>
    %160 = stablehlo.divide %152, %159 : tensor<8x8xf32>
    %cst_46 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %161 = stablehlo.broadcast_in_dim %cst_46, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %162 = stablehlo.multiply %161, %arg1 : tensor<8x8xf32>
    %163 = stablehlo.add %160, %162 : tensor<8x8xf32>
    %cst_47 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %164 = stablehlo.broadcast_in_dim %cst_47, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %165 = stablehlo.multiply %164, %163 : tensor<8x8xf32>
    %166 = stablehlo.subtract %arg1, %165 : tensor<8x8xf32>
    %cst_48 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %167 = stablehlo.broadcast_in_dim %cst_48, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %168 = stablehlo.multiply %167, %arg6 : tensor<8x8xf32>
    %cst_49 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %169 = stablehlo.broadcast_in_dim %cst_49, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %170 = stablehlo.multiply %169, %103 : tensor<8x8xf32>
    %171 = stablehlo.add %168, %170 : tensor<8x8xf32>
    %cst_50 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %172 = stablehlo.broadcast_in_dim %cst_50, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %173 = stablehlo.multiply %172, %arg10 : tensor<8x8xf32>
    %cst_51 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %174 = stablehlo.broadcast_in_dim %cst_51, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %175 = stablehlo.multiply %174, %103 : tensor<8x8xf32>
    %176 = stablehlo.multiply %175, %103 : tensor<8x8xf32>
    %177 = stablehlo.add %173, %176 : tensor<8x8xf32>
    %cst_52 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %178 = stablehlo.power %cst_52, %108 : tensor<f32>
    %cst_53 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %179 = stablehlo.subtract %cst_53, %178 : tensor<f32>
    %180 = stablehlo.broadcast_in_dim %179, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %181 = stablehlo.divide %171, %180 : tensor<8x8xf32>
    %cst_54 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %182 = stablehlo.power %cst_54, %108 : tensor<f32>
    %cst_55 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %183 = stablehlo.subtract %cst_55, %182 : tensor<f32>
    %184 = stablehlo.broadcast_in_dim %183, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %185 = stablehlo.divide %177, %184 : tensor<8x8xf32>
    %186 = stablehlo.sqrt %185 : tensor<8x8xf32>
    %cst_56 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %187 = stablehlo.broadcast_in_dim %cst_56, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %188 = stablehlo.add %186, %187 : tensor<8x8xf32>
    %189 = stablehlo.divide %181, %188 : tensor<8x8xf32>
    %cst_57 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %190 = stablehlo.broadcast_in_dim %cst_57, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %191 = stablehlo.multiply %190, %arg2 : tensor<8x8xf32>
    %192 = stablehlo.add %189, %191 : tensor<8x8xf32>
    %cst_58 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %193 = stablehlo.broadcast_in_dim %cst_58, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %194 = stablehlo.multiply %193, %192 : tensor<8x8xf32>
    %195 = stablehlo.subtract %arg2, %194 : tensor<8x8xf32>
    %cst_59 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %196 = stablehlo.broadcast_in_dim %cst_59, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %197 = stablehlo.multiply %196, %arg7 : tensor<8x8xf32>
    %cst_60 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %198 = stablehlo.broadcast_in_dim %cst_60, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %199 = stablehlo.multiply %198, %80 : tensor<8x8xf32>
    %200 = stablehlo.add %197, %199 : tensor<8x8xf32>
    %cst_61 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %201 = stablehlo.broadcast_in_dim %cst_61, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %202 = stablehlo.multiply %201, %arg11 : tensor<8x8xf32>
    %cst_62 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %203 = stablehlo.broadcast_in_dim %cst_62, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %204 = stablehlo.multiply %203, %80 : tensor<8x8xf32>
    %205 = stablehlo.multiply %204, %80 : tensor<8x8xf32>
    %206 = stablehlo.add %202, %205 : tensor<8x8xf32>
    %cst_63 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %207 = stablehlo.power %cst_63, %108 : tensor<f32>
    %cst_64 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %208 = stablehlo.subtract %cst_64, %207 : tensor<f32>
    %209 = stablehlo.broadcast_in_dim %208, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %210 = stablehlo.divide %200, %209 : tensor<8x8xf32>
    %cst_65 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %211 = stablehlo.power %cst_65, %108 : tensor<f32>
    %cst_66 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %212 = stablehlo.subtract %cst_66, %211 : tensor<f32>
    %213 = stablehlo.broadcast_in_dim %212, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %214 = stablehlo.divide %206, %213 : tensor<8x8xf32>
    %215 = stablehlo.sqrt %214 : tensor<8x8xf32>
    %cst_67 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %216 = stablehlo.broadcast_in_dim %cst_67, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %217 = stablehlo.add %215, %216 : tensor<8x8xf32>
    %218 = stablehlo.divide %210, %217 : tensor<8x8xf32>
    %cst_68 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %219 = stablehlo.broadcast_in_dim %cst_68, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %220 = stablehlo.multiply %219, %arg3 : tensor<8x8xf32>
    %221 = stablehlo.add %218, %220 : tensor<8x8xf32>
    %cst_69 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %222 = stablehlo.broadcast_in_dim %cst_69, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %223 = stablehlo.multiply %222, %221 : tensor<8x8xf32>
    %224 = stablehlo.subtract %arg3, %223 : tensor<8x8xf32>
    return %61, %137, %166, %195, %224, %113, %142, %171, %200, %119, %148, %177, %206 : tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
  func.func private @_var(%arg0: tensor<2x5x8xf32>, %arg1: tensor<i32>) -> tensor<2x5x1xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<2x5x8xf32>, tensor<f32>) -> tensor<2x5xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %cst_0 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %3 = stablehlo.divide %1, %2 : tensor<2x5x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<2x5x1xf32>) -> tensor<2x5x8xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<2x5x8xf32>
    %6 = chlo.square %5 : tensor<2x5x8xf32> -> tensor<2x5x8xf32>
    %7 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %8 = stablehlo.subtract %cst_1, %7 : tensor<f32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%6 init: %cst_2) applies stablehlo.add across dimensions = [2] : (tensor<2x5x8xf32>, tensor<f32>) -> tensor<2x5xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1] : (tensor<2x5xf32>) -> tensor<2x5x1xf32>
    %11 = stablehlo.broadcast_in_dim %8, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %12 = stablehlo.divide %10, %11 : tensor<2x5x1xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %13 = stablehlo.compare GT, %8, %cst_3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %cst_4 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %14 = call @_where(%13, %12, %cst_4) : (tensor<i1>, tensor<2x5x1xf32>, tensor<f32>) -> tensor<2x5x1xf32>
    return %14 : tensor<2x5x1xf32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<2x5x1xf32>, %arg2: tensor<f32>) -> tensor<2x5x1xf32> {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2x5x1xf32>
    %2 = stablehlo.select %arg0, %arg1, %1 : tensor<i1>, tensor<2x5x1xf32>
    return %2 : tensor<2x5x1xf32>
  }
  func.func private @tril(%arg0: tensor<5x5xi1>) -> tensor<5x5xi1> {
    %0 = stablehlo.iota dim = 0 : tensor<5x5xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5x5xi32>
    %2 = stablehlo.add %0, %1 : tensor<5x5xi32>
    %3 = stablehlo.iota dim = 1 : tensor<5x5xi32>
    %4 = stablehlo.compare GE, %2, %3, SIGNED : (tensor<5x5xi32>, tensor<5x5xi32>) -> tensor<5x5xi1>
    %c_0 = stablehlo.constant dense<false> : tensor<i1>
    %5 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i1>) -> tensor<5x5xi1>
    %6 = stablehlo.select %4, %arg0, %5 : tensor<5x5xi1>, tensor<5x5xi1>
    return %6 : tensor<5x5xi1>
  }
  func.func private @_where_0(%arg0: tensor<5x5xi1>, %arg1: tensor<2x5x5xf32>, %arg2: tensor<f32>) -> (tensor<2x5x5xf32>, tensor<2x5x5xi1>) {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<5x5xi1>) -> tensor<2x5x5xi1>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2x5x5xf32>
    %3 = stablehlo.select %1, %arg1, %2 : tensor<2x5x5xi1>, tensor<2x5x5xf32>
    return %3, %1 : tensor<2x5x5xf32>, tensor<2x5x5xi1>
  }
  func.func private @_where_1(%arg0: tensor<2x5x5xi1>, %arg1: tensor<2x5x5xf32>) -> tensor<2x5x5xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x5x5xf32>
    %1 = stablehlo.select %arg0, %arg1, %0 : tensor<2x5x5xi1>, tensor<2x5x5xf32>
    return %1 : tensor<2x5x5xf32>
  }
}
